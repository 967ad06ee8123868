"""The test settings turned into a host's, for the duration of a block."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.core.signals import setting_changed
from django.test import override_settings

from workflows.conf import PREFIX


@contextmanager
def without_engine_settings() -> Iterator[None]:
    """No WORKFLOW_ setting at all, as in a project that sets none; each one back after."""
    names = [name for name in dir(settings) if name.startswith(PREFIX)]
    assert names, "the test settings set no WORKFLOW_ setting: nothing to take away"
    try:
        with override_settings():
            for name in names:
                delattr(settings, name)
            changed(names, enter=True)
            yield
    finally:
        changed(names, enter=False)


def changed(names: list[str], *, enter: bool) -> None:
    """What override_settings says of a setting it changes: a deleted one it does not."""
    for name in names:
        setting_changed.send(
            sender=override_settings, setting=name, value=getattr(settings, name, None), enter=enter
        )
