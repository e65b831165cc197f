"""The zsh completion script (``podmuster completion zsh``).

Why: zsh users expect Tab to list subcommands and flags with their help, the values
of a flag with fixed choices, and file names wherever a file goes. The script finds
the command path in the words typed so far (:func:`.posix.walk`) and answers from
tables written from :mod:`.spec`. It works both as a file named ``_podmuster`` on
``$fpath`` and when sourced after ``compinit``.
"""

from __future__ import annotations

from collections.abc import Sequence

from podmuster.completion import posix
from podmuster.completion.spec import Command, function_name, shell_quote, summary


def script(commands: Sequence[Command], prog: str) -> str:
    fn = function_name(prog)
    spec = posix.spec_function(
        fn,
        "_pm_subs=() _pm_opts=() _pm_posc=() _pm_subnames='' _pm_valopts=''",
        [posix.spec_case(command, _tables(command)) for command in commands],
    )
    values = posix.values_function(fn, commands, "()", _array)
    walk = posix.walk(fn, "words", 2, "CURRENT")
    return f"""#compdef {prog}
# zsh completion for {prog}, written by `{prog} completion zsh`.
# Load it from ~/.zshrc after compinit:  source <({prog} completion zsh)
# or save it as _{prog} in a directory of $fpath.

{spec}

{values}

{fn}() {{
    local cmdpath='' word flag='' cur="${{words[CURRENT]}}" _pm_subnames _pm_valopts
    local -a _pm_subs _pm_opts _pm_posc _pm_values
    local -i i skip=0 npos=0
{walk}
    if ((skip > 0)); then
        flag="${{words[CURRENT - 1]}}"
    elif [[ "$cur" == -*=* && " $_pm_valopts " == *" ${{cur%%=*}} "* ]]; then
        flag="${{cur%%=*}}"
        compset -P '*='
    fi
    if [[ -n "$flag" ]]; then
        {fn}_values "$cmdpath" "$flag"
        if ((${{#_pm_values}})); then
            compadd -a _pm_values
        else
            _files
        fi
    elif [[ "$cur" == -* ]]; then
        _describe -t options option _pm_opts
    elif ((${{#_pm_subs}})); then
        _describe -t commands command _pm_subs
    elif ((${{#_pm_posc}} && npos == 0)); then
        compadd -a _pm_posc
    else
        _files
    fi
}}

if [[ "${{funcstack[1]}}" == {fn} ]]; then
    {fn} "$@"
else
    compdef {fn} {prog}
fi
"""


def _array(items: Sequence[str]) -> str:
    if not items:
        return ""
    return "(\n" + "".join(f"            {shell_quote(item)}\n" for item in items) + "        )"


def _described(name: str, text: str) -> str:
    return f"{name}:{summary(text)}" if text else name


def _tables(command: Command) -> dict[str, str]:
    subnames = [name for name, _ in command.subcommands]
    return {
        "_pm_subs": _array([_described(name, text) for name, text in command.subcommands]),
        "_pm_opts": _array(
            [_described(flag, option.help) for option in command.options for flag in option.flags]
        ),
        "_pm_posc": _array(command.positional_choices),
        "_pm_subnames": shell_quote(" ".join(subnames)) if subnames else "",
        "_pm_valopts": shell_quote(" ".join(command.value_flags)) if command.value_flags else "",
    }
