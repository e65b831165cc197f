"""The fish completion script (``podmuster completion fish``).

Why: fish users expect Tab to list subcommands and flags with their help, the values
of a flag with fixed choices, and file names wherever a file goes. One function
finds the command path from the tokens typed so far (skipping flags and their
values) and prints the candidates from tables written from :mod:`.spec`; fish
filters them by what is typed.
"""

from __future__ import annotations

from collections.abc import Sequence

from podmuster.completion.spec import Command, choice_options, function_name, summary


def script(commands: Sequence[Command], prog: str) -> str:
    fn = "_" + function_name(prog)
    specs = "\n".join(_spec_case(command, fn) for command in commands)
    values = "\n".join(
        f"        case {' '.join(_quote(f'{command.key}|{flag}') for flag in option.flags)}\n"
        f"            printf '%s\\n' {' '.join(_quote(choice) for choice in option.choices)}"
        for command, option in choice_options(commands)
    )
    return f"""# fish completion for {prog}, written by `{prog} completion fish`.
# Load it:  {prog} completion fish > ~/.config/fish/completions/{prog}.fish

function {fn}_spec --argument-names path
    set -g {fn}_subs
    set -g {fn}_opts
    set -g {fn}_valopts
    set -g {fn}_posc
    switch "$path"
{specs}
    end
end

function {fn}_values --argument-names path flag
    switch "$path|$flag"
{values}
    end
end

function {fn}_complete
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    set -l path ''
    set -l skip 0
    set -l npos 0
    {fn}_spec ''
    for word in $words[2..-1]
        if test $skip -gt 0
            set skip (math $skip - 1)
            continue
        end
        switch $word
            case '-*=*'
            case '-*'
                if contains -- $word ${fn}_valopts
                    set skip 1
                end
            case '*'
                if contains -- $word (string replace -r '\\t.*' '' -- ${fn}_subs)
                    set path (string trim -- "$path $word")
                    set npos 0
                    {fn}_spec $path
                else
                    set npos (math $npos + 1)
                end
        end
    end
    if test $skip -gt 0
        set -l values ({fn}_values $path $words[-1])
        if set -q values[1]
            printf '%s\\n' $values
        else
            __fish_complete_path $cur
        end
    else if string match -q -- '-*=*' $cur
        set -l flag (string split -m 1 = -- $cur)[1]
        set -l values ({fn}_values $path $flag)
        if not set -q values[1]
            set values (__fish_complete_path (string split -m 1 = -- $cur)[2])
        end
        for value in $values
            printf '%s=%s\\n' $flag $value
        end
    else if string match -q -- '-*' $cur
        printf '%s\\n' ${fn}_opts
    else if set -q {fn}_subs[1]
        printf '%s\\n' ${fn}_subs
    else if test $npos -eq 0; and set -q {fn}_posc[1]
        printf '%s\\n' ${fn}_posc
    else
        __fish_complete_path $cur
    end
end

complete -c {prog} -f -a '({fn}_complete)'
"""


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _described(name: str, text: str) -> str:
    return f"{_quote(name)}\\t{_quote(summary(text))}" if text else _quote(name)


def _spec_case(command: Command, fn: str) -> str:
    fields = {
        f"{fn}_subs": [_described(name, text) for name, text in command.subcommands],
        f"{fn}_opts": [
            _described(flag, option.help) for option in command.options for flag in option.flags
        ],
        f"{fn}_valopts": [_quote(flag) for flag in command.value_flags],
        f"{fn}_posc": [_quote(choice) for choice in command.positional_choices],
    }
    assigned = "\n".join(
        f"            set -g {name} \\\n"
        + " \\\n".join(f"                {item}" for item in items)
        for name, items in fields.items()
        if items
    )
    return f"        case {_quote(command.key)}\n{assigned}"
