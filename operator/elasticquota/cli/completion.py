"""``elastic-quota completion bash|zsh|fish``: shell completion scripts, made from the parser.

Each script is generated from the argparse parser itself (``commands``): the commands, each one's
options, the choices of an option or of a positional (``-o table|wide|json|yaml``, ``usage
users|groups``), and file names after the options that take a path. So a new option completes
without touching this module. Every script completes both names of the program,
``elastic-quota`` and the kubectl plugin ``kubectl-elastic_quota``.

Install: ``source <(elastic-quota completion bash)`` (or write it to a file of
``bash-completion``'s directory); zsh: a file ``_elastic-quota`` on ``$fpath``; fish:
``elastic-quota completion fish > ~/.config/fish/completions/elastic-quota.fish``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

SHELLS = ("bash", "zsh", "fish")
NAMES = ("elastic-quota", "kubectl-elastic_quota")
#: Options whose value is a path (completed with file names).
PATH_DESTS = frozenset(
    {"paths", "kubeconfig", "webhook_cert_file", "webhook_key_file", "webhook_ca_file"}
)


@dataclass
class Option:
    flags: list[str]
    help: str
    takes_value: bool
    choices: list[str] = field(default_factory=list)
    is_path: bool = False


@dataclass
class Command:
    name: str
    help: str
    options: list[Option]
    #: The choices of its first positional argument (``usage users|groups``), if any.
    words: list[str] = field(default_factory=list)


def add_completion_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    whole: Callable[[str], argparse.ArgumentParser],
) -> None:
    command = commands.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description="Print the completion script of a shell. Bash: source <(elastic-quota "
        "completion bash). Zsh: save it as _elastic-quota in a directory of $fpath. Fish: save it "
        "as ~/.config/fish/completions/elastic-quota.fish.",
    )
    command.add_argument("shell", choices=SHELLS)
    command.set_defaults(handler=lambda args: run_completion(args, whole))


def run_completion(
    args: argparse.Namespace, whole: Callable[[str], argparse.ArgumentParser]
) -> int:
    sys.stdout.write(script(args.shell, whole("elastic-quota")))
    return 0


def script(shell: str, top: argparse.ArgumentParser) -> str:
    """The completion script of ``shell`` for the parser ``top``."""
    root, commands = model(top)
    return {"bash": bash, "zsh": zsh, "fish": fish}[shell](root, commands)


def _options(parser: argparse.ArgumentParser) -> list[Option]:
    found = []
    for action in parser._actions:
        if not action.option_strings:
            continue
        found.append(
            Option(
                flags=list(action.option_strings),
                help=" ".join((action.help or "").split()),
                takes_value=action.nargs != 0,
                choices=[str(choice) for choice in action.choices or ()],
                is_path=action.dest in PATH_DESTS,
            )
        )
    return found


def model(top: argparse.ArgumentParser) -> tuple[Command, list[Command]]:
    """The top level and each command, as the scripts need them."""
    commands: list[Command] = []
    for action in top._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, sub in action.choices.items():
            positional = [a for a in sub._actions if not a.option_strings and a.choices]
            words = [str(choice) for choice in positional[0].choices or ()] if positional else []
            commands.append(Command(name, helps.get(name, ""), _options(sub), words))
    root = Command("", top.description or "", _options(top), [c.name for c in commands])
    return root, commands


def _flags(options: list[Option]) -> str:
    return " ".join(flag for option in options for flag in option.flags)


def _function_start(
    declarations: list[str], commands: list[Command], words: str, first: int, last: str
) -> list[str]:
    """The opening of the completion function, the same in bash and zsh: its ``declarations``,
    the loop that sets ``$command`` to the first subcommand among the words typed before the cursor
    (``words``: the shell's array of them, from index ``first`` to ``last``), and the case on it."""
    return [
        "_elastic_quota() {",
        *declarations,
        f"    for ((i = {first}; i < {last}; i++)); do",
        f'        case "${{{words}[i]}}" in',
        f"            {'|'.join(c.name for c in commands)})",
        f'                command="${{{words}[i]}}"; break ;;',
        "        esac",
        "    done",
        '    case "$command" in',
    ]


def _value_cases(command: Command, choices: Callable[[Option], str], path: str) -> list[str]:
    """The ``case "$prev"`` of one command: how the value of each option that takes one completes
    (``choices(option)``: the shell's call that offers its choices; ``path``: its call that offers
    file names); an option with another value completes nothing."""
    lines = [f'        "{command.name}")', '            case "$prev" in']
    for option in command.options:
        flags = "|".join(option.flags)
        if option.choices:
            lines.append(f"                {flags}) {choices(option)}; return ;;")
        elif option.is_path:
            lines.append(f"                {flags}) {path}; return ;;")
        elif option.takes_value:
            lines.append(f"                {flags}) return ;;")
    lines.append("            esac")
    return lines


def _bash_choices(option: Option) -> str:
    return f'COMPREPLY=($(compgen -W "{" ".join(option.choices)}" -- "$cur"))'


def bash(root: Command, commands: list[Command]) -> str:
    lines = [
        "# bash completion for elastic-quota (and kubectl-elastic_quota), generated by",
        "# `elastic-quota completion bash`",
        *_function_start(
            [
                '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"',
                '    local command="" i words=""',
            ],
            commands,
            "COMP_WORDS",
            1,
            "COMP_CWORD",
        ),
    ]
    for command in [root, *commands]:
        lines += _value_cases(command, _bash_choices, 'COMPREPLY=($(compgen -f -- "$cur"))')
        lines.append(f'            words="{_flags(command.options)} {" ".join(command.words)}" ;;')
    lines += [
        "    esac",
        '    COMPREPLY=($(compgen -W "$words" -- "$cur"))',
        "}",
        *(f"complete -o default -F _elastic_quota {name}" for name in NAMES),
        "",
    ]
    return "\n".join(lines)


def _zsh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _zsh_choices(option: Option) -> str:
    return f"compadd -- {' '.join(option.choices)}"


def zsh(root: Command, commands: list[Command]) -> str:
    lines = [
        f"#compdef {' '.join(NAMES)}",
        "# zsh completion for elastic-quota, generated by `elastic-quota completion zsh`",
        *_function_start(
            ['    local command="" i prev="${words[CURRENT-1]}"'], commands, "words", 2, "CURRENT"
        ),
    ]
    for command in [root, *commands]:
        lines += _value_cases(command, _zsh_choices, "_files")
        described = [
            f"{_zsh_quote(flag.replace(':', chr(92) + ':') + ':' + option.help)}"
            for option in command.options
            for flag in option.flags
        ]
        if command is root:
            described += [_zsh_quote(f"{c.name}:{' '.join(c.help.split())}") for c in commands]
        else:
            described += [_zsh_quote(word) for word in command.words]
        lines.append(f"            local -a items=({' '.join(described)})")
        lines.append("            _describe 'elastic-quota' items ;;")
    lines += ["    esac", "}", '_elastic_quota "$@"', ""]
    return "\n".join(lines)


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_option(prefix: str, option: Option) -> str:
    parts = [prefix]
    for flag in option.flags:
        if flag.startswith("--"):
            parts.append(f"-l {flag[2:]}")
        elif len(flag) == 2:
            parts.append(f"-s {flag[1]}")
        else:
            parts.append(f"-o {flag[1:]}")
    if option.choices:
        parts.append(f"-x -a {_fish_quote(' '.join(option.choices))}")
    elif option.is_path:
        parts.append("-r -F")
    elif option.takes_value:
        parts.append("-x")
    if option.help:
        parts.append(f"-d {_fish_quote(option.help)}")
    return " ".join(parts)


def fish(root: Command, commands: list[Command]) -> str:
    lines = ["# fish completion for elastic-quota, generated by `elastic-quota completion fish`"]
    names = " ".join(c.name for c in commands)
    for name in NAMES:
        top = f"complete -c {name} -n 'not __fish_seen_subcommand_from {names}'"
        lines.append(f"complete -c {name} -f")
        lines += [_fish_option(top, option) for option in root.options]
        for command in commands:
            lines.append(f"{top} -a {command.name} -d {_fish_quote(command.help)}")
        for command in commands:
            inside = f"complete -c {name} -n '__fish_seen_subcommand_from {command.name}'"
            lines += [_fish_option(inside, option) for option in command.options]
            if command.words:
                lines.append(f"{inside} -a {_fish_quote(' '.join(command.words))}")
    return "\n".join(lines) + "\n"
