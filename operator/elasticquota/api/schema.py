"""Pydantic models of the parts of Kubernetes objects we read, validated at the edge.

Only structure is checked here (types, required fields); quantities and JSON annotations are parsed
by ``elasticquota.api.parse`` so that each bad value yields a problem naming the field and the rule.
Unknown fields are ignored: these are views of objects, not their full schemas.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class View(BaseModel):
    """Base: ignore unknown fields, accept camelCase as in the Kubernetes JSON."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class ObjectMeta(View):
    name: str = Field(min_length=1)
    namespace: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    creation_timestamp: str | None = Field(default=None, alias="creationTimestamp")
    uid: str = ""
    deletion_timestamp: str | None = Field(default=None, alias="deletionTimestamp")


class ElasticQuotaSpecView(View):
    min: dict[str, Any] = Field(default_factory=dict)
    max: dict[str, Any] = Field(default_factory=dict)


class ElasticQuotaView(View):
    metadata: ObjectMeta
    spec: ElasticQuotaSpecView = Field(default_factory=ElasticQuotaSpecView)


class ResourceRequirements(View):
    requests: dict[str, Any] = Field(default_factory=dict)
    limits: dict[str, Any] = Field(default_factory=dict)


class ContainerView(View):
    name: str = ""
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    restart_policy: str | None = Field(default=None, alias="restartPolicy")


class PodSpecView(View):
    containers: list[ContainerView] = Field(default_factory=list)
    init_containers: list[ContainerView] = Field(default_factory=list, alias="initContainers")
    overhead: dict[str, Any] = Field(default_factory=dict)
    node_name: str = Field(default="", alias="nodeName")
    priority: int | None = None
    scheduling_gates: list[dict[str, Any]] = Field(default_factory=list, alias="schedulingGates")
    preemption_policy: str | None = Field(default=None, alias="preemptionPolicy")


class PodStatusView(View):
    phase: str = "Pending"
    start_time: str | None = Field(default=None, alias="startTime")


class PodView(View):
    metadata: ObjectMeta
    spec: PodSpecView = Field(default_factory=PodSpecView)
    status: PodStatusView = Field(default_factory=PodStatusView)


class NodeCondition(View):
    type: str
    status: str


class NodeSpecView(View):
    unschedulable: bool = False


class NodeStatusView(View):
    allocatable: dict[str, Any] | None = None
    capacity: dict[str, Any] | None = None
    conditions: list[NodeCondition] = Field(default_factory=list)


class NodeView(View):
    metadata: ObjectMeta
    spec: NodeSpecView = Field(default_factory=NodeSpecView)
    status: NodeStatusView = Field(default_factory=NodeStatusView)


class SelectorRequirementView(View):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)


class LabelSelectorView(View):
    match_labels: dict[str, str] = Field(default_factory=dict, alias="matchLabels")
    match_expressions: list[SelectorRequirementView] = Field(
        default_factory=list, alias="matchExpressions"
    )


class ProfileSpecView(View):
    quota_name: str = Field(alias="quotaName", min_length=1)
    quota_labels: dict[str, str] = Field(default_factory=dict, alias="quotaLabels")
    resource_ratio: str | None = Field(default=None, alias="resourceRatio")
    node_selector: LabelSelectorView = Field(alias="nodeSelector")


class ProfileView(View):
    metadata: ObjectMeta
    spec: ProfileSpecView


class BudgetMeta(ObjectMeta):
    generation: int = 0


class DisruptionBudgetSpecView(View):
    #: None: the selector is null (it selects no pod).
    selector: LabelSelectorView | None = None
    unhealthy_policy: str = Field(default="", alias="unhealthyPodEvictionPolicy")


class DisruptionBudgetStatusView(View):
    disruptions_allowed: int = Field(default=0, alias="disruptionsAllowed")
    observed_generation: int = Field(default=0, alias="observedGeneration")
    current_healthy: int = Field(default=0, alias="currentHealthy")
    desired_healthy: int = Field(default=0, alias="desiredHealthy")


class DisruptionBudgetView(View):
    api_version: str = Field(default="policy/v1", alias="apiVersion")
    metadata: BudgetMeta
    spec: DisruptionBudgetSpecView = Field(default_factory=DisruptionBudgetSpecView)
    status: DisruptionBudgetStatusView | None = None
