"""The release engine: statistics, sensitivity, secure noise and the release methods (coupling, path, last
draw, sample-and-aggregate).  The public function is :func:`bayesdp.release`; this package holds the methods.
"""
