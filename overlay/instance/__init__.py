"""Building pub/sub instances (V, T, I) from synthetic generators, social graphs and files.

Every builder returns an `InstanceFrames`: subscriptions with dense ids, the key tables that map
dense ids back to the user's identifiers, the quarantined rows, and a tally of input rows.
"""

from overlay.instance.model import InstanceFrames, RowTally

__all__ = ["InstanceFrames", "RowTally"]
