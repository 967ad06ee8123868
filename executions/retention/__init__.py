"""Retention: ended executions purged with every row that belongs to them, archived first
if asked, each leaving a tombstone that keeps the tamper evidence of its log (the last hash
of its chain and how many events it held)."""
