"""What the DisruptionPolicies allow and hold back (docs/semantics.md §15): calendars, launch controls (cost limits,
deprecated pools), expiry jitter, graceful expiration, pod annotations, spot return, zone balance and drift waves.
"""
