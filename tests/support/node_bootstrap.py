"""User data a node bootstraps from, hand-written in the EKS AMIs' formats (not nodeflow's builder), for tests of
the simulated kubelets (simulator/user_data.py reads them)."""

from __future__ import annotations


def nodeadm(endpoint: str, labels: dict[str, str], taints: list[str], config: str = "",
            name: str = "sim") -> str:
    """An AL2023 MIME user data document with a nodeadm NodeConfig, as Karpenter writes one."""
    flags = [f"    - --node-labels={','.join(f'{k}={v}' for k, v in sorted(labels.items()))}"] if labels else []
    if taints:
        flags.append(f"    - --register-with-taints={','.join(taints)}")
    kubelet = ["  kubelet:"] + (["    config:", *(f"      {line}" for line in config.splitlines())] if config else [])
    kubelet += ["    flags:", *flags] if flags else []
    return "\n".join([
        "MIME-Version: 1.0", 'Content-Type: multipart/mixed; boundary="//"', "", "--//",
        "Content-Type: application/node.eks.aws", "",
        "apiVersion: node.eks.aws/v1alpha1", "kind: NodeConfig", "spec:", "  cluster:", f"    name: {name}",
        f"    apiServerEndpoint: {endpoint}", "    certificateAuthority: Q0E=", "    cidr: 10.100.0.0/16",
        *(kubelet if len(kubelet) > 1 else []), "--//--", ""])


def bootstrap_sh(endpoint: str, labels: dict[str, str], taints: list[str], max_pods: int | None = None,
                 name: str = "sim") -> str:
    """An AL2 script calling /etc/eks/bootstrap.sh, the kubelet's flags in --kubelet-extra-args."""
    extra = [f"--node-labels={','.join(f'{k}={v}' for k, v in sorted(labels.items()))}"] if labels else []
    if taints:
        extra.append(f"--register-with-taints={','.join(taints)}")
    if max_pods:
        extra.append(f"--max-pods={max_pods}")
    args = f" --use-max-pods false --kubelet-extra-args '{' '.join(extra)}'" if max_pods else (
        f" --kubelet-extra-args '{' '.join(extra)}'" if extra else "")
    return (f"#!/bin/bash -xe\n/etc/eks/bootstrap.sh '{name}' --apiserver-endpoint '{endpoint}' "
            f"--b64-cluster-ca 'Q0E='{args}\n")


def bottlerocket(endpoint: str, labels: dict[str, str], taints: dict[str, str], max_pods: int | None = None,
                 name: str = "sim") -> str:
    """Bottlerocket TOML settings; `taints` maps a key to its `value:Effect`."""
    lines = ["[settings.kubernetes]", f'cluster-name = "{name}"', f'api-server = "{endpoint}"',
             'cluster-certificate = "Q0E="']
    if max_pods:
        lines.append(f"max-pods = {max_pods}")
    if labels:
        lines += ["[settings.kubernetes.node-labels]", *(f'"{k}" = "{v}"' for k, v in sorted(labels.items()))]
    if taints:
        lines += ["[settings.kubernetes.node-taints]", *(f'"{k}" = ["{v}"]' for k, v in sorted(taints.items()))]
    return "\n".join(lines) + "\n"
