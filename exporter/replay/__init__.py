"""Offline replay: the month-to-date totals the counters would hold, from files,
in one process (``replay``) or in provably independent parts (``parallel``)."""
