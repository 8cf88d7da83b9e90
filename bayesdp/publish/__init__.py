"""Private releases: a :class:`~bayesdp.publish.spec.ReleaseSpec` checked once, one engine
(:mod:`bayesdp.publish.engine`: choose by predicted error, reserve, draw, commit) and the registered methods
(:mod:`bayesdp.publish.methods`: coupling, path, last draw, sample-and-aggregate), with the statistics, sensitivity
and secure noise they use.  The public function is :func:`bayesdp.release`.
"""
