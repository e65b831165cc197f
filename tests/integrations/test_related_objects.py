"""The optional ``NeedsRelatedObjects`` capability: what each grouper asks the podgrouper to fetch,
and that every built-in grouper satisfies the ``WorkloadGrouper`` protocol."""

from __future__ import annotations

from adapter_builders import ctx, obj, pod

from integrations import base, registry

GVK = base.GroupVersionKind


def needs(context: base.GroupingContext) -> tuple[base.ObjectQuery, ...]:
    grouper = registry.build_registry().lookup(GVK.of(context.top_owner))
    assert isinstance(grouper, base.NeedsRelatedObjects)
    return grouper.related_objects(context)


def test_builtin_groupers_satisfy_the_protocol() -> None:
    reg = registry.build_registry()
    for gvk, _factory in (*registry.BUILTIN, *registry.PODMUSTER_ONLY):
        grouper = reg.lookup(gvk)
        assert isinstance(grouper, base.WorkloadGrouper)
        assert grouper.name


def test_ray_job_needs_its_status_cluster() -> None:
    rayjob = obj("ray.io/v1", "RayJob", "j", status={"rayClusterName": "j-abc"})
    legacy = base.ObjectQuery("scheduling.run.ai/v2alpha2", "PodGroup", "ns", "pg-j-uid-j")
    assert needs(ctx(rayjob, pod())) == (
        base.ObjectQuery("ray.io/v1", "RayCluster", "ns", "j-abc"),
        legacy,
    )
    cluster_needs = needs(ctx(obj("ray.io/v1", "RayCluster", "c"), pod()))
    assert [q.kind for q in cluster_needs] == ["PodGroup"]


def test_knative_needs_the_revision_in_gang_mode_only() -> None:
    svc = obj("serving.knative.dev/v1", "Service", "s")
    the_pod = pod(labels={"serving.knative.dev/revision": "s-00001"})
    assert needs(ctx(svc, the_pod)) == (
        base.ObjectQuery("serving.knative.dev/v1", "Revision", "ns", "s-00001"),
    )
    assert needs(ctx(svc, the_pod, knative_gang_schedule=False)) == ()


def test_mpi_needs_launcher_pods_when_waiting_for_workers() -> None:
    job = obj(
        "kubeflow.org/v2beta1",
        "MPIJob",
        "m",
        spec={"launcherCreationPolicy": "WaitForWorkersReady"},
    )
    [query] = needs(ctx(job, pod()))
    assert (query.kind, dict(query.labels)) == (
        "Pod",
        {"training.kubeflow.org/job-name": "m", "training.kubeflow.org/job-role": "launcher"},
    )
    assert needs(ctx(obj("kubeflow.org/v2beta1", "MPIJob", "m"), pod())) == ()


def test_job_needs_its_legacy_podgroup_and_skip_delegates() -> None:
    wf = obj("argoproj.io/v1alpha1", "Workflow", "wf")
    job = obj("batch/v1", "Job", "j", owner=wf)
    expected = (base.ObjectQuery("scheduling.run.ai/v2alpha2", "PodGroup", "ns", "pg-p-uid-j"),)
    assert needs(ctx(job, pod())) == expected
    assert needs(ctx(wf, pod(owner=job), (job, wf))) == expected
    assert needs(ctx(wf, pod(owner=wf), (wf,))) == ()
