"""What an observer learns by comparing the targets of a release with each other.

The gate tests each target against the baseline on its own. An observer who collects the
released records can also rank the targets against each other: :mod:`.attacks` holds the
signals it ranks them by and how well a ranking finds the deviating targets (AUC, top-k
recall); :mod:`.view` scores every configuration of a simulation with them.
"""
