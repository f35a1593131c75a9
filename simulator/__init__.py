"""A Kubernetes API server emulator with a simulated world behind it (kubelets, scheduler, controllers,
EC2-backed nodes through moto), so nodeflow's real `kubernetes` client code, kubectl, tests, the demo and
the benchmarks run without a cluster.

    from simulator.server import Simulator
    with Simulator(scenario="cluster.yaml", ec2_endpoint=moto_url, time_scale=0.01) as sim:
        v1 = kubernetes.client.CoreV1Api(sim.api_client())      # or kubectl --kubeconfig sim.kubeconfig_path
        sim.world.set_node_ready("n1", False); sim.inject_faults(rate=0.1); sim.stats()

Modules: server (Simulator, thread + loop), api (REST routing and verbs), store (objects, indexes, watch
log), world (deletion, cascade, PDBs, eviction, kubelets), controllers (ReplicaSet, StatefulSet, DaemonSet),
deployments (Deployment -> ReplicaSets), scale (the scale subresource), scheduler, ec2 (instances -> nodes;
user_data, membership, kubelet, kubelet_resources, ccm, ice), ledger, faults,
patch, selectors, discovery, openapi + schemas (/openapi/v3) and fieldcheck (fieldValidation), crd_validation
(custom resources pruned, defaulted and checked as kube-apiserver admits them: crd_schema, crd_cel + cel_library;
CRDs refused by cel_cost, docs/decisions.md §20), watch_options (sendInitialEvents), scenario (snapshot loading),
generate (realistic clusters).
"""
