"""The routes of executions and pools, mounted by workflows.urls."""

from executions import control_views, pool_views, views
from workflows.rest.routes import both

urlpatterns = [
    *both("pools", pool_views.PoolListCreate.as_view(), "pool-list"),
    *both("pools/<str:name>", pool_views.PoolDetail.as_view(), "pool-detail"),
    *both("executions", views.ExecutionListCreate.as_view(), "execution-list"),
    *both("executions/bulk/cancel", control_views.BulkView.as_view(action="cancel"), "bulk-cancel"),
    *both("executions/bulk/retry", control_views.BulkView.as_view(action="retry"), "bulk-retry"),
    *both("executions/<uuid:execution_id>", views.ExecutionDetail.as_view(), "execution-detail"),
    *both("executions/<uuid:execution_id>/tasks", views.TaskList.as_view(), "task-list"),
    *both(
        "executions/<uuid:execution_id>/tasks/<str:node_id>",
        views.TaskDetail.as_view(),
        "task-detail",
    ),
    *both("executions/<uuid:execution_id>/events", views.EventList.as_view(), "event-list"),
    *both("executions/<uuid:execution_id>/state", control_views.StateView.as_view(), "state"),
    *both("executions/<uuid:execution_id>/why", control_views.WhyView.as_view(), "why"),
    *both(
        "executions/<uuid:execution_id>/tasks/<str:node_id>/why",
        control_views.TaskWhyView.as_view(),
        "task-why",
    ),
    *both("executions/<uuid:execution_id>/cancel", control_views.CancelView.as_view(), "cancel"),
    *both(
        "executions/<uuid:execution_id>/pause",
        control_views.PauseView.as_view(action="pause"),
        "pause",
    ),
    *both(
        "executions/<uuid:execution_id>/resume",
        control_views.PauseView.as_view(action="resume"),
        "resume",
    ),
    *both("executions/<uuid:execution_id>/retry", control_views.RetryView.as_view(), "retry"),
    *both("executions/<uuid:execution_id>/replay", control_views.ReplayView.as_view(), "replay"),
    *both(
        "executions/<uuid:execution_id>/tasks/<str:node_id>/approve",
        control_views.SignalView.as_view(decision="approve"),
        "approve",
    ),
    *both(
        "executions/<uuid:execution_id>/tasks/<str:node_id>/retry",
        control_views.ParkedTaskView.as_view(action="retry"),
        "task-retry",
    ),
    *both(
        "executions/<uuid:execution_id>/tasks/<str:node_id>/fail",
        control_views.ParkedTaskView.as_view(action="fail"),
        "task-fail",
    ),
    *both(
        "executions/<uuid:execution_id>/signals/<str:name>",
        control_views.NamedSignalView.as_view(),
        "signal",
    ),
    *both(
        "executions/<uuid:execution_id>/tasks/<str:node_id>/reject",
        control_views.SignalView.as_view(decision="reject"),
        "reject",
    ),
]
