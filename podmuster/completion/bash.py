"""The bash completion script (``podmuster completion bash``).

Why: bash users expect Tab to offer a command's subcommands, its flags and the values
of a flag with fixed choices, and file names wherever a file goes. The script finds
the command path in the words typed so far (:func:`.posix.walk`), then answers from
tables written from :mod:`.spec`. Where it offers nothing, ``complete -o default``
falls back to file names.
"""

from __future__ import annotations

from collections.abc import Sequence

from podmuster.completion import posix
from podmuster.completion.spec import Command, function_name, shell_quote


def script(commands: Sequence[Command], prog: str) -> str:
    fn = function_name(prog)
    spec = posix.spec_function(
        fn,
        "_pm_subnames='' _pm_opts='' _pm_valopts='' _pm_posc=''",
        [posix.spec_case(command, _tables(command)) for command in commands],
    )
    values = posix.values_function(fn, commands, "''", lambda choices: _words(choices))
    walk = posix.walk(fn, "COMP_WORDS", 1, "COMP_CWORD")
    return f"""# bash completion for {prog}, written by `{prog} completion bash`.
# Load it from ~/.bashrc:  source <({prog} completion bash)

{spec}

{values}

{fn}() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" cmdpath='' word flag='' prefix='' i skip=0 npos=0
    local _pm_subnames _pm_opts _pm_valopts _pm_posc _pm_values
    COMPREPLY=()
{walk}
    if ((skip > 0)); then
        if [[ "$cur" == "=" ]]; then
            flag="${{COMP_WORDS[COMP_CWORD - 1]}}"
            cur=''
        elif [[ "${{COMP_WORDS[COMP_CWORD - 1]}}" == "=" ]]; then
            flag="${{COMP_WORDS[COMP_CWORD - 2]}}"
        else
            flag="${{COMP_WORDS[COMP_CWORD - 1]}}"
        fi
    elif [[ "$cur" == -*=* && " $_pm_valopts " == *" ${{cur%%=*}} "* ]]; then
        flag="${{cur%%=*}}"
        prefix="$flag="
        cur="${{cur#*=}}"
    fi
    if [[ -n "$flag" ]]; then
        {fn}_values "$cmdpath" "$flag"
        # no fixed values: nothing here, and readline offers file names
        [[ -n "$_pm_values" ]] && COMPREPLY=($(compgen -P "$prefix" -W "$_pm_values" -- "$cur"))
        return 0
    fi
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$_pm_opts" -- "$cur"))
    elif [[ -n "$_pm_subnames" ]]; then
        COMPREPLY=($(compgen -W "$_pm_subnames" -- "$cur"))
    elif [[ -n "$_pm_posc" ]] && ((npos == 0)); then
        COMPREPLY=($(compgen -W "$_pm_posc" -- "$cur"))
    fi
    return 0
}}

complete -o default -F {fn} {prog}
"""


def _words(words: Sequence[str]) -> str:
    return shell_quote(" ".join(words)) if words else ""


def _tables(command: Command) -> dict[str, str]:
    return {
        "_pm_subnames": _words([name for name, _ in command.subcommands]),
        "_pm_opts": _words([flag for option in command.options for flag in option.flags]),
        "_pm_valopts": _words(command.value_flags),
        "_pm_posc": _words(command.positional_choices),
    }
