import os
import sys

# tests/exact.py holds independent reference values shared by several test modules.
sys.path.insert(0, os.path.dirname(__file__))
