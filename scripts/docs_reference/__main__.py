"""python -m scripts.docs_reference [--write | --check | --output DIR]"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"


def _quiet_environment() -> None:
    """The defaults, wherever it runs: no WORKFLOW_ setting of this shell, the embedded
    database and broker (nothing is connected to), help text at a fixed width."""
    for name in list(os.environ):
        if name.startswith("WORKFLOW_") or name in ("DATABASE_URL", "CELERY_BROKER_URL"):
            del os.environ[name]
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ.setdefault("SECRET_KEY", "docs-reference-generator-" + "x" * 40)
    os.environ["COLUMNS"] = "100"
    os.environ["NO_COLOR"] = "1"
    os.environ.pop("FORCE_COLOR", None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.docs_reference")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite docs/reference/")
    mode.add_argument("--check", action="store_true", help="exit 1 naming each stale file")
    mode.add_argument("--output", type=Path, help="write the pages under this directory")
    args = parser.parse_args(argv)

    _quiet_environment()
    import django

    django.setup()
    from scripts.docs_reference.markdown import Undocumented
    from scripts.docs_reference.pages import generate, stale

    try:
        pages = generate()
    except Undocumented as error:
        print(f"undocumented: {error}", file=sys.stderr)
        return 1
    if args.check:
        problems = stale(pages, REFERENCE)
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print(
                "docs/reference/ is not what the code generates: run "
                "./dev docs --regenerate (python -m scripts.docs_reference --write) "
                "and commit the result",
                file=sys.stderr,
            )
        return 1 if problems else 0
    target = args.output or REFERENCE
    for name, text in pages.items():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    print(f"wrote {len(pages)} files under {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
