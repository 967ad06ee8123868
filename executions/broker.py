"""The embedded broker: kombu's filesystem transport, with atomic message writes.

Upstream writes a message file in place, so a consumer polling the folder can pick it up
half-written and crash on the JSON. Here a message is written under a hidden temporary
name and renamed into the queue folder, which is atomic on one filesystem.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    # kombu's own filesystem Channel._put takes (queue, payload, **kwargs); the stubs say
    # (queue, message).
    def _put(self, queue, payload, **kwargs) -> None:  # type: ignore[override]
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # The consumer only takes names that end in ".<queue>.msg" after the first dot.
        partial = os.path.join(self.data_folder_out, f".partial-{uuid.uuid4()}")
        try:
            with open(partial, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel


TRANSPORT_ALIASES.setdefault("workflowfs", "executions.broker:Transport")
