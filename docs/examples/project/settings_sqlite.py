# settings.py, on SQLite (development only): the web server, the worker and beat share one
# file. IMMEDIATE takes the write lock when a transaction begins and waits up to `timeout`
# seconds for it, and WAL lets readers run beside the writer; without them, concurrent
# writers fail with "database is locked".
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": BASE_DIR / "db.sqlite3",  # noqa: F821 (startproject's settings define it)
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
}
