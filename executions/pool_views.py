"""Pools API: POST/GET /pools, GET/PATCH /pools/{name}."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_view
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from executions.services.pools import PoolNameTaken, pool_create, pool_update, pools_in_use
from workflows.models import Pool, slug_validator
from workflows.rest.detail import Detail
from workflows.rest.fields import MAX_INT32, StrictCharField, StrictIntegerField
from workflows.rest.openapi import CONFLICT, extend_schema
from workflows.rest.views import EngineListView

SLOTS_HELP = "Attempts of nodes naming this pool that may run at once, across all executions."


class PoolCreateSerializer(serializers.Serializer):
    name = StrictCharField(max_length=100, validators=[slug_validator])
    slots = StrictIntegerField(min_value=0, max_value=MAX_INT32, help_text=SLOTS_HELP)
    description = StrictCharField(required=False, default="", allow_blank=True, max_length=2000)


class PoolUpdateSerializer(serializers.Serializer):
    """A PATCH: an absent field is unchanged."""

    slots = StrictIntegerField(
        required=False, min_value=0, max_value=MAX_INT32, help_text=SLOTS_HELP
    )
    description = StrictCharField(required=False, allow_blank=True, max_length=2000)


class PoolSerializer(serializers.ModelSerializer):
    running = serializers.IntegerField(read_only=True, help_text="Slots taken now.")
    free = serializers.SerializerMethodField(help_text="Slots free now.")
    waiting = serializers.IntegerField(
        read_only=True, help_text="Attempts scheduled in the pool, not yet running."
    )

    class Meta:
        model = Pool
        fields = [
            "name",
            "slots",
            "running",
            "free",
            "waiting",
            "description",
            "created_at",
            "created_by",
        ]
        read_only_fields = fields

    def get_free(self, pool: Pool) -> int:
        return max(pool.slots - getattr(pool, "running", 0), 0)


def _pool(name: str) -> Pool:
    pool = pools_in_use().filter(name=name).first()
    if pool is None:
        raise NotFound(f"No pool named '{name}'.")
    return pool


class PoolListCreate(EngineListView):
    serializer_class = PoolSerializer

    def get_queryset(self):
        return pools_in_use()

    @extend_schema(request=PoolCreateSerializer, responses={201: PoolSerializer, 409: CONFLICT})
    def post(self, request: Request) -> Response:
        body = PoolCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            pool = pool_create(**body.validated_data, by=request.user.get_username())
        except PoolNameTaken as taken:
            return Response({"detail": str(taken)}, status=status.HTTP_409_CONFLICT)
        return Response(PoolSerializer(_pool(pool.name)).data, status=status.HTTP_201_CREATED)


@extend_schema_view(patch=extend_schema(request=PoolUpdateSerializer, responses=PoolSerializer))
class PoolDetail(Detail):
    serializer_class = PoolSerializer
    update_serializer_class = PoolUpdateSerializer

    def find(self, key: str) -> Pool:
        return _pool(key)

    def change(self, request: Request, resource: Pool, changes: dict[str, Any]) -> None:
        pool_update(pool=resource, **changes)
