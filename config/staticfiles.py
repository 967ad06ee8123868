"""Static files (the admin's and the browsable API's CSS, Swagger UI) served by WhiteNoise
in every mode: `runserver` with DEBUG off and gunicorn alike, with no web server in front.

collectstatic's output in STATIC_ROOT (with a precompressed .gz of each file) is served
first; a file not collected there is served straight from its app, so `runserver` and a
fresh checkout need no collectstatic.
"""

from __future__ import annotations

import os

from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    def add_files(self, root: str, prefix: str | None = None) -> None:
        # No STATIC_ROOT yet means nothing was collected: no warning, the apps serve.
        if os.path.isdir(root):
            super().add_files(root, prefix)

    def add_files_from_finders(self) -> None:
        # WhiteNoise lets the apps' copies replace the collected ones, and with them their
        # compressed variants; keep the collected file wherever there is one.
        collected = dict(self.files)
        super().add_files_from_finders()
        self.files.update(collected)
