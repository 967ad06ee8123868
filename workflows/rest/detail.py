"""GET and PATCH of one resource named in the URL: the shape the pool, schedule and
trigger endpoints share. A subclass says how to find the resource (404 naming it) and
which service applies a validated PATCH; the answer is always the resource read again,
so it shows what the service stored, not what the request asked for."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from workflows.rest.views import EngineGenericView


class Detail(EngineGenericView):
    #: Validates a PATCH body: an absent field is unchanged.
    update_serializer_class: type[serializers.Serializer]

    def find(self, key: str) -> Any:
        """The resource, or raise NotFound naming the key."""
        raise NotImplementedError

    def change(self, request: Request, resource: Any, changes: dict[str, Any]) -> None:
        """Apply validated changes through the resource's service."""
        raise NotImplementedError

    def get(self, request: Request, **url: str) -> Response:
        return Response(self.get_serializer(self.find(*url.values())).data)

    def patch(self, request: Request, **url: str) -> Response:
        (key,) = url.values()
        resource = self.find(key)
        body = self.update_serializer_class(data=request.data)
        body.is_valid(raise_exception=True)
        self.change(request, resource, dict(body.validated_data))
        return Response(self.get_serializer(self.find(key)).data)
