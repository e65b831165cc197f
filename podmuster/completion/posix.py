"""What the bash and zsh scripts share: the tables' functions and the walk over the words.

Why: both shells find the command path the same way (skip flags and the values of
the flags that take one, step into a subcommand, count positionals), in the same
``[[ ]]``/``(( ))`` syntax, so that code is written once here and the two scripts
differ only in how they read the words and offer the candidates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from podmuster.completion.spec import Command, choice_options, shell_quote


def spec_function(fn: str, reset: str, cases: Sequence[str]) -> str:
    """``FN_spec PATH``: set the ``_pm_*`` tables of the command ``PATH``."""
    body = "\n".join(cases)
    return f"""{fn}_spec() {{
    {reset}
    case "$1" in
{body}
    esac
}}"""


def spec_case(command: Command, assignments: dict[str, str]) -> str:
    """One ``case`` branch of :func:`spec_function`; empty assignments are left out."""
    lines = "".join(f"        {name}={value}\n" for name, value in assignments.items() if value)
    return f"    {shell_quote(command.key)})\n{lines}        ;;"


def values_function(
    fn: str, commands: Sequence[Command], empty: str, values: Callable[[Sequence[str]], str]
) -> str:
    """``FN_values PATH FLAG``: set ``_pm_values`` to the flag's fixed choices."""
    cases = "\n".join(
        f"    {' | '.join(shell_quote(f'{command.key}|{flag}') for flag in option.flags)})"
        f" _pm_values={values(option.choices)} ;;"
        for command, option in choice_options(commands)
    )
    return f"""{fn}_values() {{
    _pm_values={empty}
    case "$1|$2" in
{cases}
    esac
}}"""


def walk(fn: str, words: str, first: int, current: str) -> str:
    """The loop over ``words[first]`` .. the word before the cursor.

    It leaves ``cmdpath`` (the command path; not ``path``, which zsh ties to
    ``$PATH``), ``skip`` (> 0: the word at the cursor is a flag's value) and ``npos``
    (positionals given to the command), with the command's tables set by ``FN_spec``.
    ``_pm_subnames`` and ``_pm_valopts`` are space-separated words.
    """
    return f"""    {fn}_spec ''
    for ((i = {first}; i < {current}; i++)); do
        word="${{{words}[i]}}"
        if ((skip > 0)); then
            skip=$((skip - 1))
            continue
        fi
        case "$word" in
        -*=*) ;;
        -*)
            if [[ " $_pm_valopts " == *" $word "* ]]; then
                skip=1
                # bash splits `--flag=value` into `--flag`, `=`, `value`
                [[ "${{{words}[i + 1]}}" == "=" ]] && skip=2
            fi
            ;;
        *)
            if [[ " $_pm_subnames " == *" $word "* ]]; then
                cmdpath="${{cmdpath:+$cmdpath }}$word"
                npos=0
                {fn}_spec "$cmdpath"
            else
                npos=$((npos + 1))
            fi
            ;;
        esac
    done"""
