"""Shell completion for ``podmuster``: ``podmuster completion bash|zsh|fish`` (docs/cli.md §8).

Why a package: the commands, flags and choices are read once from the argparse tree
(:mod:`.spec`), and each shell's script is written from that one description
(:mod:`.bash`, :mod:`.zsh`, :mod:`.fish`), so a new subcommand, flag or choice completes
in every shell without touching this package.
"""
