"""Shell completion from the argparse parser itself, so it never falls behind the commands.

One engine answers three callers: `nodeflow __complete WORDS...` (what the bash and zsh scripts of `nodeflow
completion bash|zsh` call on TAB), and `kubectl_complete-nodeflow` (what kubectl runs to complete `kubectl nodeflow
...`). The answer is kubectl's plugin format (Cobra's): one candidate per line, then `:DIRECTIVE`, where 4 means
"no file names" and 0 lets the shell offer files (for `-f`, `--kubeconfig` and the like).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from starter.kubeconfig import api_client, resolve

FILES = 0  # Cobra's ShellCompDirectiveDefault: the shell may complete file names
NO_FILES = 4  # ShellCompDirectiveNoFileComp
FILE_METAVARS = {"FILE", "SNAPSHOT", "PATH", "SCENARIO"}
FILE_DESTS = {"filename", "kubeconfig", "report", "workdir", "catalog", "kubeconfig_out", "scenario"}
NODE_DESTS = {"node"}


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]


def _values(action: argparse.Action, cur: str) -> tuple[list[str], int]:
    """Candidates for the value of an option or a positional."""
    if action.choices is not None:
        return [str(c) for c in action.choices if str(c).startswith(cur)], NO_FILES
    if action.dest in NODE_DESTS:
        return [n for n in node_names() if n.startswith(cur)], NO_FILES
    if action.dest in FILE_DESTS or (isinstance(action.metavar, str) and action.metavar in FILE_METAVARS):
        return [], FILES
    return [], NO_FILES


def candidates(parser: argparse.ArgumentParser, words: Sequence[str]) -> tuple[list[str], int]:
    """(candidates, directive) for the last of `words` (the words after the program name; the last may be "")."""
    *done, cur = list(words) or [""]
    pending: argparse.Action | None = None  # an option whose value comes next
    used = 0  # positionals given so far
    for word in done:
        if pending is not None:
            pending = None
            continue
        if word.startswith("-"):
            action = parser._option_string_actions.get(word.split("=", 1)[0])
            if action is not None and action.nargs != 0 and "=" not in word:
                pending = action
            continue
        sub = _subcommands(parser)
        if word in sub:
            parser, used = sub[word], 0
        else:
            used += 1
    if pending is not None:
        return _values(pending, cur)
    if cur.startswith("-"):
        return sorted(o for o in parser._option_string_actions if o.startswith(cur)), NO_FILES
    sub = _subcommands(parser)
    if sub:
        return sorted(n for n in sub if n.startswith(cur)), NO_FILES
    positionals = _positionals(parser)
    if used < len(positionals):
        return _values(positionals[used], cur)
    return [], NO_FILES


def node_names() -> list[str]:
    """The cluster's node names (the kubeconfig as every command resolves it); none when it cannot be read fast."""
    try:
        from kubernetes import client as k8s

        api = api_client(resolve(None))
        try:
            return sorted(n.metadata.name for n in k8s.CoreV1Api(api).list_node(_request_timeout=2).items)
        finally:
            api.close()
    except Exception:  # completion must never print a traceback into the prompt
        return []


def answer(parser: argparse.ArgumentParser, words: Sequence[str]) -> str:
    """The completion of `words` in kubectl's plugin format, from the CLI's parser (starter/cli.py builds it)."""
    found, directive = candidates(parser, words)
    return "".join(f"{c}\n" for c in found) + f":{directive}\n"


BASH = r'''# nodeflow completion for bash; load with:  source <(nodeflow completion bash)
_nodeflow_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}" line directive=4
  COMPREPLY=()
  while IFS= read -r line; do
    case "$line" in
      :*) directive="${line#:}" ;;
      ?*) COMPREPLY+=("$line") ;;
    esac
  done < <("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
  if [ "${#COMPREPLY[@]}" -eq 0 ] && [ $((directive & 4)) -eq 0 ]; then
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _nodeflow_complete nodeflow kubectl-nodeflow
'''

ZSH = ("#compdef nodeflow kubectl-nodeflow\n"
       "# nodeflow completion for zsh; load with:  source <(nodeflow completion zsh)\n"
       "autoload -U +X bashcompinit && bashcompinit\n" + BASH.split("\n", 1)[1])


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "completion", help="print the shell completion script (bash or zsh)",
        description="Print a completion script: `source <(nodeflow completion bash)` in ~/.bashrc, or "
                    "`source <(nodeflow completion zsh)` in ~/.zshrc. `kubectl nodeflow` completes through "
                    "kubectl_complete-nodeflow, installed beside kubectl-nodeflow.")
    p.add_argument("shell", choices=("bash", "zsh"))
    p.set_defaults(func=lambda args: print(BASH if args.shell == "bash" else ZSH, end="") or 0)
