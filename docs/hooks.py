"""MkDocs hook: the command reference, one page per subcommand, made from the argparse parser at
build time, so that it can never disagree with ``tareador CMD --help``."""

from __future__ import annotations

import argparse

from mkdocs.structure.files import File

from tareador.cli.main import SUBCOMMANDS, build_parser

REFERENCE = "reference/commands"


def subcommand_parsers() -> dict[str, argparse.ArgumentParser]:
    actions = build_parser()._actions
    sub = next(a for a in actions if isinstance(a, argparse._SubParsersAction))
    return {name: sub.choices[name] for name in SUBCOMMANDS}


def _flags(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    metavar = "" if action.nargs == 0 else f" {action.metavar or action.dest.upper()}"
    return ", ".join(f"`{flag}{metavar}`" for flag in action.option_strings)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def command_page(name: str, parser: argparse.ArgumentParser) -> str:
    """The page of one subcommand: what it does, its usage, every option, its example."""
    lines = [f"# tareador {name}", "", _cell(parser.description or ""), "", "```", parser.format_usage().strip(), "```",
             "", "| argument | meaning |", "|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        meaning = action.help % vars(action) if action.help and "%(" in action.help else (action.help or "")
        choices = f" (one of: {', '.join(map(str, action.choices))})" if action.choices else ""
        lines.append(f"| {_flags(action)} | {_cell(meaning)}{choices} |")
    if parser.epilog:
        lines += ["", "Example:", "", "```", parser.epilog.removeprefix("example:").strip("\n"), "```"]
    return "\n".join(lines) + "\n"


def index_page() -> str:
    rows = [f"| [`tareador {name}`]({name}.md) | {_cell((p.description or '').split('. ')[0])} |"
            for name, p in subcommand_parsers().items()]
    return "\n".join(["# Commands", "", "Every command's `--help` says the same; these pages are made from it.", "",
                      "| command | what it does |", "|---|---|", *rows]) + "\n"


def on_files(files, config):
    files.append(File.generated(config, f"{REFERENCE}/index.md", content=index_page()))
    for name, parser in subcommand_parsers().items():
        files.append(File.generated(config, f"{REFERENCE}/{name}.md", content=command_page(name, parser)))
    return files


def on_config(config):
    """The nav's "Commands" entry becomes a section: the index, then one page per subcommand."""
    def expand(items):
        for i, item in enumerate(items):
            if isinstance(item, dict):
                (title, value), = item.items()
                if value == f"{REFERENCE}/index.md":
                    items[i] = {title: [f"{REFERENCE}/index.md"] + [{f"tareador {name}": f"{REFERENCE}/{name}.md"}
                                                                     for name in SUBCOMMANDS]}
                elif isinstance(value, list):
                    expand(value)
    expand(config["nav"] or [])
    return config
