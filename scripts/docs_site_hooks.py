"""mkdocs hooks of the documentation site (mkdocs.yml `hooks`).

The REST API page renders the committed OpenAPI document with Redoc, offline: Redoc's
standalone bundle comes from drf-spectacular-sidecar (the one /redoc serves), and the
document is written beside the page as a script, so the page needs no request of its own
(it opens from the disk too). Every page carries a Content-Security-Policy that lets the
browser load nothing from another host: Redoc's "powered by" logo, the one thing it would
fetch from its maker's CDN, is refused.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import drf_spectacular_sidecar

REDOC = (
    Path(drf_spectacular_sidecar.__file__).parent
    / "static"
    / "drf_spectacular_sidecar"
    / "redoc"
    / "bundles"
)
#: Where the REST API page finds them, relative to the site's root.
REDOC_SCRIPT = "assets/redoc/redoc.standalone.js"
DOCUMENT_SCRIPT = "reference/openapi.js"


#: Only the site's own files; inline scripts and styles (Material's, Redoc's) allowed.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
    "worker-src 'self' blob:; connect-src 'self'"
)


def _with_policy(html: str) -> str:
    meta = f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
    return html.replace("<head>", f"<head>\n    {meta}", 1)


def on_post_page(output: str, **kwargs: Any) -> str:
    return _with_policy(output)


def on_post_template(output_content: str, **kwargs: Any) -> str:
    """The pages rendered from a template alone (404.html; sitemap.xml has no head)."""
    return _with_policy(output_content)


def on_post_build(config: Any, **kwargs: Any) -> None:
    site = Path(config["site_dir"])
    target = site / REDOC_SCRIPT
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REDOC / "redoc.standalone.js", target)
    shutil.copyfile(REDOC / "redoc.standalone.js.LICENSE.txt", target.parent / "LICENSE.txt")
    document = json.loads((Path(config["docs_dir"]) / "reference" / "openapi.json").read_text())
    (site / DOCUMENT_SCRIPT).write_text(
        "window.OPENAPI_DOCUMENT = " + json.dumps(document, separators=(",", ":")) + ";\n"
    )
