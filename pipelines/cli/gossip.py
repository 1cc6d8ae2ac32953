"""Gossip commands: `simulate PROTOCOL` (one subcommand per protocol, each with only its own
flags), disseminate, friend-bound."""

from __future__ import annotations

import argparse

from overlay import registry
from overlay.errors import InputError
from pipelines import disseminate, friend_bound, gossipsub, rappel, simulate
from pipelines.churn import SESSIONS, SUBSTITUTION, churn_help, parse_churn, parse_mass_failure
from pipelines.cli.command import Command, add_command, checked
from pipelines.cli.designs import DESIGN_COLUMNS
from pipelines.cli.flags import integer, non_negative_float, positive_float, positive_int, positive_ints, share
from pipelines.console import format_table

RAPPEL_CHURN = (SESSIONS,)
GOSSIPSUB_CHURN = (SESSIONS,)
DISSEMINATE_CHURN = (SUBSTITUTION,)


def _run_flags(parser: argparse.ArgumentParser, run_id: str) -> None:
    parser.add_argument("--instance", required=True, help="the instance whose subscriptions drive the protocol")
    parser.add_argument("--seed", type=integer, default=1, help="every random choice's seed (default 1)")
    parser.add_argument("--run-id", help=f"default: {run_id}; the same command resumes it")
    parser.add_argument(
        "--replace", action="store_true", help="redo the run id: delete the stored run first, then simulate it anew"
    )
    parser.add_argument(
        "--skip-diameters",
        action="store_true",
        help="store the run's metrics without topic diameters (evaluate can add them later)",
    )


def _snapshot_flag(parser: argparse.ArgumentParser, default: int, unit: str, stored: str) -> None:
    """`--snapshot-every`: how often a simulation stores what it resumes from."""
    parser.add_argument(
        "--snapshot-every",
        type=positive_int,
        default=default,
        metavar=unit.upper(),
        help=f"store {stored} this often (default {default}); a crash loses at most that many {unit}: the same "
        "command resumes",
    )


def _feverfew_arguments(parser: argparse.ArgumentParser, cycles: bool) -> None:
    _run_flags(parser, "INSTANCE.PROTOCOL.cCYCLES.sSEED" if cycles else "INSTANCE.PROTOCOL.sSEED")
    if not cycles:  # full knowledge: only the seed matters
        return
    parser.add_argument(
        "--pss",
        choices=simulate.PSS_KINDS,
        default="cyclon",
        help="the random peer sampler: Cyclon shuffles (default) or fresh uniform samples each cycle (Thm 1-2's model)",
    )
    parser.add_argument(
        "--bubble-start",
        type=positive_int,
        default=30,
        help="the cycle BubbleSample starts at (default 30, the paper's)",
    )
    parser.add_argument("--cycles", type=positive_int, default=40, help="gossip cycles (default 40)")
    parser.add_argument(
        "--delta", type=positive_int, default=1, help="rebuild the ln-covered view every DELTA cycles (default 1)"
    )
    parser.add_argument(
        "--clear-similar",
        action="store_true",
        help="empty the similar view after each rebuild (the literal Alg. 1)",
    )
    _snapshot_flag(parser, simulate.SNAPSHOT_EVERY, "cycles", "every node's state (and commit the cycles' measures)")


def _rappel_arguments(parser: argparse.ArgumentParser) -> None:
    _run_flags(parser, "INSTANCE.rappel.hHOURS.sSEED")
    parser.add_argument(
        "--hours", type=positive_float, default=1.0, help="simulated hours (default 1; 120 rounds of 30 s each)"
    )
    parser.add_argument(
        "--friends", type=positive_int, default=6, help="friends per node, the paper's alpha (default 6)"
    )
    parser.add_argument(
        "--children", type=positive_int, default=5, help="children per node and feed, the paper's beta (default 5)"
    )
    parser.add_argument(
        "--feed-summary",
        choices=("bloom", "exact"),
        default="bloom",
        help="what a node learns of another's feeds: a 1024-bit Bloom filter (default) or the set",
    )
    parser.add_argument(
        "--utility",
        choices=("interest-distance", "interest"),
        default="interest-distance",
        help="the audit's utility: interest over distance (default) or interest only (Fig. 9's ablation)",
    )
    parser.add_argument(
        "--mass-failure",
        metavar="SHARE@FROM[-TO]",
        help="a share of the nodes fails at hour FROM and returns at TO (e.g. 0.5@2-3; no -TO: for good)",
    )
    parser.add_argument("--churn", metavar="KIND:VALUE", help=churn_help(RAPPEL_CHURN))
    parser.add_argument(
        "--proper-leaves",
        type=share,
        default=0.0,
        metavar="SHARE",
        help="that share of churn's session ends are proper leaves (§4.4: the children are handed over first); "
        "the rest, and every mass failure, are failures (default 0)",
    )
    parser.add_argument(
        "--arrivals",
        type=non_negative_float,
        default=0.0,
        metavar="MINUTES",
        help="spread the nodes' first arrival over these minutes (default 0: all at once)",
    )
    parser.add_argument("--model-seed", type=integer, default=1, help="the latency model's seed (default 1)")
    _snapshot_flag(
        parser,
        rappel.SNAPSHOT_EVERY,
        "rounds",
        "the rounds' measures, every node's friendship state and every feed's tree",
    )


def _gossipsub_arguments(parser: argparse.ArgumentParser) -> None:
    _run_flags(parser, "INSTANCE.gossipsub.PROFILE.hHEARTBEATS[.peersN].sSEED")
    parser.add_argument(
        "--heartbeats", type=positive_int, default=120, help="heartbeat intervals simulated (default 120)"
    )
    parser.add_argument(
        "--profile",
        choices=tuple(gossipsub.PROFILES),
        default=gossipsub.DEFAULT_PROFILE,
        help="the parameters and rules: go-libp2p-pubsub's defaults (go-libp2p, the default: D 6, D_low 5, "
        "D_high 12, pruning at D_high), the spec's text (spec: D_low 4, pruning above D_high) "
        "or Ethereum's consensus layer (eth2: D 8, D_low 6, D_high 12, a 0.7 s heartbeat)",
    )
    parser.add_argument("--churn", metavar="KIND:VALUE", help=churn_help(GOSSIPSUB_CHURN))
    parser.add_argument(
        "--mass-failure",
        metavar="SHARE@FROM[-TO]",
        help="a share of the nodes fails at heartbeat FROM and returns at TO (e.g. 0.2@60-90; no -TO: for good)",
    )
    parser.add_argument(
        "--model-seed", type=integer, default=1, help="the latency model's seed: control messages' delays (default 1)"
    )
    parser.add_argument(
        "--peers",
        type=int,
        default=0,
        help="connections per node, drawn as a libp2p host with topic discovery and a peer limit would make them "
        "(e.g. 50); meshes form among connected peers (default 0: every subscriber of a node's topics)",
    )
    parser.add_argument(
        "--snapshot-every",
        type=positive_int,
        default=None,
        metavar="SUBSCRIPTIONS",
        help="commit whole topics in batches of about this many subscriptions (default "
        f"{gossipsub.MEMORY_BATCH_SUBSCRIPTIONS:,} in the memory regime, {gossipsub.BATCH_SUBSCRIPTIONS:,} in the spark "
        "regime); a crash loses at most one batch: the same command resumes",
    )


def _prepare_gossipsub(args, _settings) -> gossipsub.GossipsubRequest:
    churn = failure = None
    if args.churn:
        sessions = parse_churn(args.churn, GOSSIPSUB_CHURN)
        churn = (sessions.online, sessions.offline)
    if args.mass_failure:
        mass = parse_mass_failure(args.mass_failure, "heartbeats", whole=True)
        failure = (mass.share, int(mass.start), None if mass.end is None else int(mass.end))
    request = gossipsub.GossipsubRequest(
        args.instance, args.heartbeats, args.seed, args.profile, churn, failure, args.model_seed, args.peers
    )
    return checked(request, args.run_id)


def _prepare_feverfew(args, _settings) -> simulate.SimulateRequest:
    gossips = registry.PROTOCOLS[args.protocol].cycles
    request = simulate.SimulateRequest(args.instance, args.protocol, seed=args.seed)
    if gossips:
        request = simulate.SimulateRequest(
            args.instance,
            args.protocol,
            args.cycles,
            args.seed,
            args.bubble_start,
            args.pss,
            args.delta,
            args.clear_similar,
        )
    return checked(request, args.run_id)


def _prepare_rappel(args, _settings) -> rappel.RappelRequest:
    failure = None
    if args.mass_failure:
        mass = parse_mass_failure(args.mass_failure, "hours")
        failure = (mass.share, mass.start, mass.end)
    churn = None
    if args.churn:
        sessions = parse_churn(args.churn, RAPPEL_CHURN)
        churn = (sessions.online, sessions.offline)
    request = rappel.RappelRequest(
        args.instance,
        args.hours,
        args.seed,
        args.friends,
        args.children,
        args.feed_summary,
        args.utility,
        failure,
        churn,
        args.arrivals,
        args.model_seed,
        args.proper_leaves,
    )
    return checked(request, args.run_id)


def _simulation(job, round_rows, round_columns, snapshot_every: int):
    """The execute step of a simulation job: run (or resume) it, print its run row and rounds."""

    def execute(args, request, spark, lakehouse) -> None:
        run = job(
            spark,
            lakehouse,
            request,
            args.run_id,
            snapshot_every=getattr(args, "snapshot_every", snapshot_every),
            progress=not args.quiet,
            diameters=not args.skip_diameters,
            replace=args.replace,
        )
        print(format_table([run], DESIGN_COLUMNS))
        print(format_table(round_rows(lakehouse, run["run_id"]), round_columns))

    return execute


_feverfew = _simulation(simulate.run_simulation, simulate.cycle_rows, simulate.CYCLE_COLUMNS, simulate.SNAPSHOT_EVERY)
_rappel = _simulation(rappel.run_rappel, rappel.round_rows, rappel.ROUND_COLUMNS, rappel.SNAPSHOT_EVERY)
_gossipsub = _simulation(gossipsub.run_gossipsub, gossipsub.heartbeat_rows, gossipsub.HEARTBEAT_COLUMNS, None)


SIMULATORS = {
    registry.FEVERFEW_CYCLES: (_feverfew_arguments, Command(_feverfew, prepare=_prepare_feverfew)),
    registry.RAPPEL_ROUNDS: (_rappel_arguments, Command(_rappel, prepare=_prepare_rappel)),
    registry.GOSSIPSUB_HEARTBEATS: (_gossipsub_arguments, Command(_gossipsub, prepare=_prepare_gossipsub)),
}


def _add_simulate(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    simulator = add_command(
        commands,
        "simulate",
        "build an overlay by gossip (Feverfew, SpiderCast, Rappel, gossipsub): a run like a design; see simulate PROTOCOL -h",
        common,
        None,
    )
    protocols = simulator.add_subparsers(dest="protocol", required=True, metavar="PROTOCOL")
    for name in registry.protocols(registry.OVERLAY_GOSSIP):
        protocol = registry.PROTOCOLS[name]
        add_arguments, handler = SIMULATORS[protocol.simulator]
        parser = add_command(protocols, name, f"{protocol.summary} ({protocol.paper})", common, handler)
        if protocol.simulator == registry.FEVERFEW_CYCLES:
            add_arguments(parser, protocol.cycles)
        else:
            add_arguments(parser)


def _spread_failure(text: str, protocol: str) -> float:
    """A spread's `--mass-failure SHARE`: that share of the nodes is down from the start."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value <= 1.0:
        raise InputError(
            f"--protocol {protocol} spreads each publication in a few heartbeats: --mass-failure takes SHARE "
            f"alone, a number in (0, 1] (those nodes are down from the start), got '{text}'"
        )
    return value


def _prepare_disseminate(args, _settings) -> disseminate.DisseminateRequest:
    share_, cycle = 0.0, 1
    spreads = args.protocol in disseminate.SPREADS
    if args.mass_failure and spreads:
        share_ = _spread_failure(args.mass_failure, args.protocol)
    elif args.mass_failure:
        mass = parse_mass_failure(args.mass_failure, "cycles", whole=True, returns=False)
        share_, cycle = mass.share, int(mass.start)
    request = disseminate.DisseminateRequest(
        args.run_id,
        args.publications,
        args.cycles,
        args.seed,
        parse_churn(args.churn, DISSEMINATE_CHURN).rate if args.churn else 0.0,
        share_,
        cycle,
        tuple(args.topic_sizes),
        args.live,
        args.protocol,
        args.model_seed,
        None if args.flood_publish is None else args.flood_publish == "on",
        args.message_bytes,
        args.upload_mbps,
    )
    return checked(request, args.routing_run_id)


def _disseminate(args, request, spark, lakehouse) -> None:
    done = disseminate.run_dissemination(spark, lakehouse, request, args.routing_run_id, progress=not args.quiet)
    if request.spreads:
        print(f"Spread {done['routing_run_id']} ({request.protocol} on {done['run_id']}):")
        print(format_table(disseminate.spread_rows(lakehouse, done["routing_run_id"]), disseminate.SPREAD_COLUMNS))
        return
    print(f"Dissemination {done['routing_run_id']} ({request.protocol} on {done['run_id']}, {request.cycles} cycles):")
    print(format_table(disseminate.summary_rows(lakehouse, done["routing_run_id"]), disseminate.SUMMARY_COLUMNS))


def _prepare_friend_bound(args, _settings) -> friend_bound.FriendBoundRequest:
    request = friend_bound.FriendBoundRequest(args.instance, args.friends, args.min_feeds, args.sample, args.seed)
    request.check()
    return request


def _friend_bound(_args, request, spark, lakehouse) -> None:
    rows = friend_bound.run_friend_bound(spark, lakehouse, request)
    print(
        f"Greedy best friends on {request.instance} ({request.sample} nodes of at least {request.min_feeds} feeds, "
        f"seed {request.seed}): nodes whose friends cover all their feeds"
    )
    print(format_table(rows, friend_bound.COLUMNS))


def add_commands(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    _add_simulate(commands, common)
    spreader = add_command(
        commands,
        "disseminate",
        "publications spread on any overlay run's topic subgraphs: push-pull gossip in cycles, under churn or "
        "mass failure; or, in latency-model time, a flood along the topic subgraphs or gossipsub's push along "
        "its meshes with lazy IHAVE/IWANT gossip",
        common,
        Command(_disseminate, prepare=_prepare_disseminate),
    )
    spreader.add_argument("--run-id", required=True, help="a complete overlay run (designed, simulated or imported)")
    spreader.add_argument(
        "--protocol",
        choices=disseminate.KINDS,
        default=disseminate.PROTOCOL,
        help="push-pull (default): Feverfew's gossip in cycles; flood: every subscriber forwards a first copy "
        "to its topic-subgraph neighbours; gossipsub-spread (a gossipsub run): the push along its meshes and "
        "lazy IHAVE/IWANT gossip at the heartbeats",
    )
    spreader.add_argument("--publications", type=positive_int, required=True, help="how many, on distinct topics")
    spreader.add_argument(
        "--topic-sizes",
        type=positive_ints,
        default=(),
        metavar="N[,N...]",
        help="publish on the topics nearest these sizes, one each (for instance 50,503,1304)",
    )
    spreader.add_argument("--cycles", type=positive_int, default=40, help="gossip cycles (default 40)")
    spreader.add_argument("--churn", metavar="KIND:VALUE", help=churn_help(DISSEMINATE_CHURN))
    spreader.add_argument(
        "--mass-failure",
        metavar="SHARE@CYCLE",
        help="push-pull: that share of all nodes fails at that cycle, for good; a spread takes SHARE alone (those "
        "nodes are down from the start)",
    )
    spreader.add_argument(
        "--model-seed", type=integer, default=1, help="a spread's latency model seed (default 1; as route's)"
    )
    spreader.add_argument(
        "--flood-publish",
        choices=("on", "off"),
        help="gossipsub-spread: whether the publisher sends to every subscriber of the topic (v1.1's flood "
        "publishing; default: the run's profile's, off in every profile)",
    )
    spreader.add_argument(
        "--message-bytes",
        type=positive_int,
        default=256,
        help="a spread's message size (default 256): bytes sent, and gossipsub v1.2's IDONTWANT for messages at "
        "or above the run's profile's threshold (1 KiB for go-libp2p and eth2)",
    )
    spreader.add_argument(
        "--upload-mbps",
        type=non_negative_float,
        default=0.0,
        help="a spread's uplink per node in Mbit/s: a node's copies leave one after another (default 0: no limit)",
    )
    spreader.add_argument(
        "--seed", type=integer, default=1, help="publications', failures' and choices' seed (default 1)"
    )
    spreader.add_argument(
        "--live",
        action="store_true",
        help="a Feverfew run only: its gossip goes on during the dissemination, and the overlay heals "
        "(dead entries leave the views, returning nodes rejoin); protocol push-pull-live",
    )
    spreader.add_argument(
        "--routing-run-id",
        help="default: RUN_ID.PROTOCOL.pN.cC[.subR][.failSatC].sSEED (push-pull), "
        "RUN_ID.PROTOCOL.pN[.failS][.flood-publish|.no-flood-publish][.bBYTES][.upMBPS].mMODEL.sSEED (a spread)",
    )
    bounder = add_command(
        commands,
        "friend-bound",
        "ComNet'09 Fig. 1: for sampled nodes, how many feeds their greedy best friends cover",
        common,
        Command(_friend_bound, prepare=_prepare_friend_bound),
    )
    bounder.add_argument("--instance", required=True, help="a feed instance")
    bounder.add_argument("--friends", type=positive_int, default=6, help="friends per node (default 6)")
    bounder.add_argument(
        "--min-feeds", type=positive_int, default=5, help="sample nodes of at least this many feeds (default 5)"
    )
    bounder.add_argument("--sample", type=positive_int, default=1000, help="how many nodes (default 1000)")
    bounder.add_argument("--seed", type=integer, default=1, help="the sample's seed (default 1)")
