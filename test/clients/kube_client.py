"""Drives the simulated cluster with the official Python Kubernetes client (python3-kubernetes).

Usage: kube_client.py KUBECONFIG NODE POD_NAMESPACE POD
Prints one JSON object: what each call returned, as the client parsed it. Any exception the
client raises while deserializing (a missing required field, a bad type) fails the run.
"""
import json
import sys

from kubernetes import client, config, watch


def main() -> None:
    kubeconfig, node, pod_ns, pod = sys.argv[1:5]
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()
    out = {}

    nodes = core.list_node()
    out["nodes"] = [n.metadata.name for n in nodes.items]
    first = nodes.items[0]
    out["nodeInfo"] = first.status.node_info.to_dict()
    out["conditions"] = [c.type for c in first.status.conditions]

    patched = core.patch_node(node, {"metadata": {"labels": {"python-client": "yes"}}})
    out["patchedLabel"] = patched.metadata.labels.get("python-client")
    out["patchedWithJsonPatch"] = core.patch_node(node, [{"op": "add", "path": "/spec/unschedulable", "value": True}]).spec.unschedulable

    # watch=True on the wire; ends by itself after the node changes (timeout_seconds bounds it).
    seen = []
    w = watch.Watch()
    for event in w.stream(core.list_node, timeout_seconds=20):
        obj = event["object"]
        seen.append(f'{event["type"]} {obj.metadata.name}')
        if event["type"] == "ADDED" and len(seen) == len(out["nodes"]):
            core.patch_node(node, {"metadata": {"labels": {"python-client": "watched"}}})
        if event["type"] == "MODIFIED":
            out["watchedLabel"] = obj.metadata.labels.get("python-client")
            w.stop()
    out["watch"] = seen

    pods = core.list_pod_for_all_namespaces()
    out["pods"] = len(pods.items)
    out["containerStatuses"] = sum(len(p.status.container_statuses or []) for p in pods.items)

    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=pod, namespace=pod_ns))
    core.create_namespaced_pod_eviction(pod, pod_ns, body)
    out["evictedPodTerminating"] = core.read_namespaced_pod(pod, pod_ns).metadata.deletion_timestamp is not None

    try:
        core.list_node(limit="abc")
    except client.ApiException as err:
        out["badLimit"] = {"status": err.status, "message": json.loads(err.body)["message"]}

    events = core.list_event_for_all_namespaces(field_selector=f"involvedObject.name={node},involvedObject.kind=Node")
    out["coreEvents"] = [e.reason for e in events.items]
    new_events = client.EventsV1Api().list_event_for_all_namespaces()
    out["eventsV1"] = sorted({f"{e.reason} {e.regarding.kind}/{e.regarding.name} by {e.reporting_controller}" for e in new_events.items})

    lease = client.CoordinationV1Api().read_namespaced_lease(node, "kube-node-lease")
    out["leaseHolder"] = lease.spec.holder_identity
    out["pdbs"] = [p.status.disruptions_allowed for p in client.PolicyV1Api().list_pod_disruption_budget_for_all_namespaces().items]
    out["daemonSets"] = [d.status.number_ready for d in client.AppsV1Api().list_daemon_set_for_all_namespaces().items]
    out["namespaces"] = [n.metadata.name for n in core.list_namespace().items]
    out["configMaps"] = len(core.list_config_map_for_all_namespaces().items)
    out["quotas"] = [q.status.hard for q in core.list_resource_quota_for_all_namespaces().items]
    out["limitRanges"] = [i.type for lr in core.list_limit_range_for_all_namespaces().items for i in lr.spec.limits]
    out["nodeLeases"] = len(client.CoordinationV1Api().list_namespaced_lease("kube-node-lease").items)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
