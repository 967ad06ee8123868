"""The admin as a person sees it, in a real browser: who did what, and tokens masked.

Issue "Trust": the admin shows who created workflows, versions, executions and
schedules, and API tokens by a prefix only (a token is a password).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from executions.services.start import execution_start
from workflows.services import workflow_create

pytestmark = pytest.mark.django_db(transaction=True)

DEFINITION = {"nodes": [{"id": "hello", "type": "function", "function": "std.noop"}]}


def log_in(chrome, live_server, username: str, password: str) -> None:
    chrome.get(f"{live_server.url}/admin/login/?next=/admin/")
    chrome.find_element(By.NAME, "username").send_keys(username)
    chrome.find_element(By.NAME, "password").send_keys(password)
    chrome.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    # The click returns before the POST's answer has loaded (seen under load).
    WebDriverWait(chrome, 30).until(lambda _: "Site administration" in chrome.title)


def column(chrome, name: str) -> list[str]:
    """The texts of one list-display column of the admin change list."""
    cells = chrome.find_elements(By.CSS_SELECTOR, f"#result_list tbody .field-{name}")
    return [cell.text for cell in cells]


def test_admin_lists_show_who_did_what_and_mask_tokens(
    chrome, live_server, screenshots: Path
) -> None:
    users = get_user_model()
    users.objects.create_superuser("root", "root@example.com", "pw-root")
    ada = users.objects.create_user("ada", password="pw-ada")
    workflow = workflow_create(name="audited", definition=DEFINITION, by="ada")
    execution, _ = execution_start(version=workflow.versions.get(), input={}, by="ada")
    token = Token.objects.create(user=ada)

    log_in(chrome, live_server, "root", "pw-root")

    chrome.get(f"{live_server.url}/admin/workflows/workflowdefinition/")
    chrome.save_screenshot(str(screenshots / "admin-workflows-created-by.png"))
    assert column(chrome, "created_by") == ["ada"]

    chrome.get(f"{live_server.url}/admin/executions/execution/")
    chrome.save_screenshot(str(screenshots / "admin-executions-created-by.png"))
    assert column(chrome, "created_by") == ["ada"]
    assert str(execution.pk) in chrome.page_source

    chrome.get(f"{live_server.url}/admin/authtoken/tokenproxy/")
    chrome.save_screenshot(str(screenshots / "admin-tokens-masked.png"))
    assert column(chrome, "key_prefix") == [f"{token.key[:6]}…"]
    assert token.key not in chrome.page_source
    # The stylesheet loads: what a person sees is the styled admin, not bare HTML.
    header = chrome.find_element(By.ID, "header")
    assert header.value_of_css_property("background-color") not in ("rgba(0, 0, 0, 0)", "")
