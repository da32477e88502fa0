"""Relation and evidence commands: relate, relations, evidence."""

from __future__ import annotations

import argparse
from typing import Any

from ..cli_support import EXIT_OK, command, make_scope, open_store, print_json


def register(subs: Any) -> None:
    p = command(subs, "relate", cmd_relate, "declare a typed relation SRC -> DST (supports, contradicts, causes, ...)")
    p.add_argument("src", metavar="SRC", help="id of the source memory")
    p.add_argument("relation", metavar="RELATION", help="supports, contradicts, causes, requires, part_of, similar_to or a name of your own")
    p.add_argument("dst", metavar="DST", help="id of the target memory")
    p.add_argument("--weight", type=float, default=1.0, metavar="W", help="edge weight (default 1.0)")
    p.add_argument("--remove", action="store_true", help="remove the relation instead")
    p = command(subs, "relations", cmd_relations, "the relations from and to one memory, strongest first")
    p.add_argument("id", metavar="ID")
    p.add_argument("--relation", metavar="NAME", help="only this relation")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = command(subs, "evidence", cmd_evidence, "record evidence for or against a memory being true")
    p.add_argument("id", metavar="ID")
    p.add_argument("direction", choices=("for", "against"), help="whether the evidence supports the memory")
    p.add_argument("--strength", type=float, default=1.0, metavar="S", help="worth in observations (default 1)")


def cmd_relate(args: argparse.Namespace) -> int:
    scope = make_scope(args)
    with open_store(args) as mem:
        if args.remove:
            gone = mem.unrelate(args.src, args.dst, args.relation, scope)
            print(f"removed {args.src} -{args.relation}-> {args.dst}" if gone else "no such relation")
            return EXIT_OK
        e = mem.relate(args.src, args.dst, args.relation, scope, weight=args.weight)
    print(f"related {e.src} -{e.relation}-> {e.dst} weight={e.weight:g}")
    return EXIT_OK


def cmd_relations(args: argparse.Namespace) -> int:
    from ..serialize import edge_dict

    with open_store(args) as mem:
        edges = mem.relations(args.id, make_scope(args), relation=args.relation)
    if args.json:
        print_json([edge_dict(e) for e in edges])
        return EXIT_OK
    if not edges:
        print("no relations")
    for e in edges:
        arrow = f"-{e.relation}-> {e.dst}" if e.src == args.id else f"<-{e.relation}- {e.src}"
        print(f"{e.weight:7.3f}  {arrow}")
    return EXIT_OK


def cmd_evidence(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        item = mem.record_evidence(args.id, make_scope(args), supports=args.direction == "for", strength=args.strength)
    print(f"{item.id} confidence={item.confidence:.3f} (alpha={item.conf_alpha:g}, beta={item.conf_beta:g})")
    return EXIT_OK
