"""A view of the host's own, on the host's DRF defaults (nothing set on it)."""

from __future__ import annotations

from django.contrib.auth.models import Group
from rest_framework import generics, serializers


class TeamSerializer(serializers.ModelSerializer):
    class Meta:
        model = Group
        fields = ["name"]


class TeamList(generics.ListAPIView):
    queryset = Group.objects.order_by("name")
    serializer_class = TeamSerializer
