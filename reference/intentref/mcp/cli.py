"""``intent-runtime-mcp``: serve configured Intent instances as MCP tools.

Seed 000 "MCP 服务" (spec: R-SRV-004 .. R-SRV-010): the file names instances only; the
command builds and owns them, and stops serving at the end of input or on an exit signal.
stdout carries MCP protocol bytes only; everything else goes to stderr.  Exit status: 0
after a clean stop, 2 for a configuration fault (found before serving starts), 1 for
anything else (D-MCP-012, D-MCP-013).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import logging
import os
import signal
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NoReturn

from intentref.core import jsonpointer
from intentref.core.errors import IntentParseError
from intentref.core.limits import DEFAULT_MAX_JOBS, DEFAULT_MAX_REPLAY_ENTRIES, MAX_OPTION_VALUE
from intentref.intent import Intent
from intentref.mcp.capacity import (
    CALL_BURST_SECONDS,
    DEFAULT_CALLS_PER_SECOND,
    DEFAULT_JOB_IDLE_SECONDS,
    per_client_fault,
)
from intentref.mcp.tools import TOOLS_IN_WORDS

PROG: Final = "intent-runtime-mcp"
CONFIG_KEYS: Final = frozenset({"instances"})  # spec: R-SRV-010 -- only instances is read
# D-MCP-016: a top-level "$comment" string is a note for people (JSON Schema's own
# convention, and conformance/instances.json carries one); it is allowed and not read.
COMMENT_KEY: Final = "$comment"
# D-MCP-017: the largest configuration file read.  Each instance's schema is capped at
# 256 KiB by the core (MAX_SCHEMA_BYTES), so 8 MiB holds dozens of maximal instances, and a
# file this size is read and parsed in well under a second; anything larger is a mistake
# (or /dev/zero) and is refused before it is read.
MAX_CONFIG_BYTES: Final = 8 * 1024 * 1024
# D-MCP-017: the deepest nesting a configuration may have.  The deepest accepted schema
# document is MAX_SCHEMA_JSON_DEPTH (128) levels, three levels below the file's root
# (instances, NAME, schema): 256 leaves room and stays far below Python's recursion limit,
# which the Intent constructor's schema walk would otherwise hit first.
MAX_CONFIG_DEPTH: Final = 256
EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1
EXIT_CONFIG: Final = 2
# D-MCP-023: from an exit signal to the end of the process.  In-flight tool calls finish in
# milliseconds; what can take longer is the SDK ending thousands of idle MCP sessions one
# by one (about 0.2 ms each), and nothing of theirs outlives the process.
STOP_BUDGET_SECONDS: Final = 1.5

# Bridge option -> the command-line flag that sets it; also how a Bridge config fault
# about an option is reported against the flag rather than the file.
OPTION_FLAGS: Final = {
    "maxJobs": "--max-jobs",
    "maxReplayEntries": "--max-replay-entries",
    "maxReplayBytes": "--max-replay-bytes",
    "jobTtlMs": "--job-ttl-ms",
    "replayTtlMs": "--replay-ttl-ms",
}

# spec: R-SRV-010 -- members named like serve_intent_mcp options are not read from the file,
# and must not make it fail either; any other unknown member is a fault (D-MCP-012).
IGNORED_KEYS: Final = frozenset({*OPTION_FLAGS, "transport"})

logger = logging.getLogger(PROG)


@dataclass(frozen=True)
class ConfigFault(Exception):
    """A configuration fault: where it is, its error code and what is wrong (D-MCP-013)."""

    where: str  # the config file, or the flag at fault
    pointer: str | None  # JSON Pointer into the file; None for a flag
    code: str
    message: str

    def line(self) -> str:
        # One line whatever the message holds, so a supervisor's log keeps it whole.
        message = " ".join(self.message.split())
        if self.pointer is None:
            return f"{PROG}: configuration fault: {self.where}: {self.code}: {message}"
        return f"{PROG}: configuration fault: {self.where}#{self.pointer}: {self.code}: {message}"


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT (for example 127.0.0.1:8765), got {text!r}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine: ``localhost`` or a loopback address (D-MCP-019)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere


REMOTE_WARNING: Final = (
    "warning: serving on {host}, which is not a loopback address, with --allow-unauthenticated: nothing "
    "authenticates peers, so anyone who can reach this port can call the tools, and a 2026-07-28 client "
    "that learns a jobId can act on that job."
)


def _count(text: str) -> int:
    if not text.isdigit() or int(text) > 2_147_483_647:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to 2147483647, got {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86_400 * 365:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"expected seconds from 0 to 31536000, got {text!r}")
    return value


# HTTP-only flags (D-MCP-021): the fair-capacity policy of a shared endpoint.  A stdio
# connection is one client that owns the whole Bridge, so they mean nothing there.
HTTP_FLAGS: Final = {
    "max_jobs_per_client": "--max-jobs-per-client",
    "job_idle_seconds": "--job-idle-seconds",
    "max_calls_per_second": "--max-calls-per-second",
    "auth_tokens": "--auth-tokens",
    "auth_jwks": "--auth-jwks",
}


def _http_url(text: str) -> str:
    if not text.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(f"expected an http:// or https:// URL, got {text!r}")
    return text


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=f"Serve intent-runtime instances as the MCP tools {TOOLS_IN_WORDS}.",
    )
    parser.add_argument(
        "--config", required=True, metavar="FILE", help='JSON file: {"instances": {NAME: IntentConfig}}'
    )
    parser.add_argument(
        "--http",
        type=_host_port,
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (port 0 picks a free one)",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --http to bind a non-loopback address; needs an --auth-* option or --allow-unauthenticated (D-MCP-035)",
    )
    parser.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="with --allow-remote: serve any peer without authorization, on purpose (warned about)",
    )
    auth = parser.add_mutually_exclusive_group()
    auth.add_argument(
        "--auth-tokens",
        metavar="FILE",
        help='HTTP: require a bearer token listed as {"tokens": [{"principal": NAME, "sha256": HEX}]} (D-MCP-030)',
    )
    auth.add_argument(
        "--auth-jwks",
        metavar="FILE_OR_URL",
        help="HTTP: require a JWT access token signed by a key of this JWKS; needs --auth-issuer and --auth-audience",
    )
    parser.add_argument("--auth-issuer", type=_http_url, metavar="URL", help="with --auth-jwks: the tokens' iss")
    parser.add_argument("--auth-audience", metavar="AUD", help="with --auth-jwks: this server's aud (RFC 8707)")
    parser.add_argument(
        "--auth-resource",
        type=_http_url,
        metavar="URL",
        help="with --auth-*: this endpoint as clients reach it, for the protected-resource metadata "
        "(behind a proxy, or bound to 0.0.0.0; default: the URL served)",
    )
    parser.add_argument(
        "--max-calls-per-second",
        type=_count,
        metavar="N",
        help=f"HTTP: tool calls per second per principal, or per client without authorization (default "
        f"{DEFAULT_CALLS_PER_SECOND}, bursts of {CALL_BURST_SECONDS} s of them; 0: no limit; D-MCP-034)",
    )
    parser.add_argument(
        "--max-jobs-per-client",
        type=_count,
        metavar="N",
        help="HTTP: active jobs one client may hold, from 1 to half of the Bridge's job slots "
        "(default: half, at least 1; D-MCP-025)",
    )
    parser.add_argument(
        "--job-idle-seconds",
        type=_seconds,
        metavar="S",
        help=f"HTTP: cancel an active job after S seconds without progress (default {DEFAULT_JOB_IDLE_SECONDS:g}; "
        "0: never; D-MCP-021)",
    )
    for option, flag in OPTION_FLAGS.items():
        parser.add_argument(flag, type=int, metavar="N", dest=option, help=f"Bridge option {option}")
    return parser


def _instance_fault(file: str, name: str, exc: Any) -> ConfigFault:
    """Report an Intent construction error at the instance, deepened by its issue path."""
    pointer = "/instances/" + jsonpointer.escape_token(name)
    issues = getattr(exc, "issues", ())
    inner = issues[0].path if issues else None
    if isinstance(inner, str) and (inner == "" or inner.startswith("/")):
        # The core files definition faults against the schema document and the rest
        # against the Intent config (intentref.core.schema_subset.check_definition).
        if exc.code in ("SCHEMA_UNSUPPORTED", "LIMIT_EXCEEDED"):
            pointer += "/schema"
        pointer += inner
    return ConfigFault(file, pointer, str(exc.code), str(exc.message))


def _too_deep(document: Any) -> str | None:
    """The pointer of the first value nested deeper than MAX_CONFIG_DEPTH, or None.

    Iterative, so a deep document cannot exhaust the stack it is being checked for.
    """
    stack: list[tuple[Any, str, int]] = [(document, "", 0)]
    while stack:
        value, pointer, depth = stack.pop()
        if depth > MAX_CONFIG_DEPTH:
            return pointer
        if isinstance(value, dict):
            stack.extend((v, f"{pointer}/{jsonpointer.escape_token(str(k))}", depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{pointer}/{i}", depth + 1) for i, v in enumerate(value))
    return None


def _read_config_bytes(file: str) -> bytes:
    """The file's bytes, refusing anything but a regular file of at most MAX_CONFIG_BYTES (D-MCP-017).

    O_NONBLOCK so that a FIFO is refused instead of waiting for a writer; the size is
    checked before reading and again while reading (the file may grow in between).
    """
    fd = -1
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise ConfigFault(file, "", "CONFIG_INVALID", f"the configuration must be a regular file; this is {kind}.")
        too_large = f"the file is larger than {MAX_CONFIG_BYTES} bytes, the configuration size limit."
        if info.st_size > MAX_CONFIG_BYTES:
            raise ConfigFault(file, "", "LIMIT_EXCEEDED", too_large)
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, MAX_CONFIG_BYTES + 1 - total):
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_CONFIG_BYTES:
                raise ConfigFault(file, "", "LIMIT_EXCEEDED", too_large)
        return b"".join(chunks)
    except OSError as exc:
        raise ConfigFault(
            file, "", "CONFIG_INVALID", f"cannot read the file: {exc.strerror or exc}."
        ) from None
    finally:
        if fd >= 0:
            os.close(fd)


def build_instances(file: str) -> dict[str, Any]:
    """Read ``file`` and build its Intent instances, or raise ConfigFault."""
    raw = _read_config_bytes(file)
    depth_fault = f"the configuration is nested deeper than {MAX_CONFIG_DEPTH} levels."
    try:
        document = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigFault(file, "", "CONFIG_INVALID", "the file is not UTF-8 text.") from None
    except json.JSONDecodeError as exc:
        message = f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}."
        raise ConfigFault(file, "", "CONFIG_INVALID", message) from None
    except RecursionError:
        # The parser's own recursion guard: nesting far past MAX_CONFIG_DEPTH.
        raise ConfigFault(file, "", "LIMIT_EXCEEDED", depth_fault) from None
    if (deep := _too_deep(document)) is not None:
        raise ConfigFault(file, deep, "LIMIT_EXCEEDED", depth_fault)
    if not isinstance(document, dict):
        raise ConfigFault(
            file, "", "CONFIG_INVALID", 'the configuration must be an object {"instances": {...}}.'
        )
    for key in sorted(document):
        if key in IGNORED_KEYS:
            where = OPTION_FLAGS.get(key, "serve_intent_mcp(transport=...)")
            print(
                f"{PROG}: warning: {file}#/{key}: ignored; this option is set by {where}, not the file.",
                file=sys.stderr,
            )
        elif key == COMMENT_KEY:
            if not isinstance(document[key], str):
                raise ConfigFault(file, "/$comment", "CONFIG_INVALID", "$comment must be a string.")
        elif key not in CONFIG_KEYS:
            # Capacity options are flags, not file members; a stray key is a typo or a
            # misplaced option, and silently ignoring it would serve the wrong thing.
            pointer = "/" + jsonpointer.escape_token(key)
            raise ConfigFault(
                file, pointer, "CONFIG_INVALID", f"unknown configuration member {json.dumps(key)}."
            )
    if "instances" not in document:
        raise ConfigFault(file, "/instances", "CONFIG_INVALID", "instances is required.")
    configs = document["instances"]
    if not isinstance(configs, dict):
        raise ConfigFault(
            file, "/instances", "CONFIG_INVALID", "instances must be an object of named Intent configs."
        )
    instances: dict[str, Any] = {}
    try:
        for name, config in configs.items():
            pointer = "/instances/" + jsonpointer.escape_token(name)
            if not isinstance(config, dict):
                raise ConfigFault(file, pointer, "CONFIG_INVALID", "an instance config must be an object.")
            try:
                instances[name] = Intent(config)
            except IntentParseError as exc:
                raise _instance_fault(file, name, exc) from None
            except RecursionError:
                # A backstop: MAX_CONFIG_DEPTH keeps every document the core walks shallow.
                raise ConfigFault(file, pointer, "LIMIT_EXCEEDED", depth_fault) from None
    except BaseException:
        dispose_instances(instances)
        raise
    return instances


def dispose_instances(instances: Mapping[str, Any]) -> None:
    for intent in instances.values():
        try:
            intent.dispose()
        except Exception:
            logger.exception("disposing an Intent instance failed")


def _bridge_fault(file: str, exc: Any) -> ConfigFault:
    """A Bridge config error, reported against the flag (or the file) it is about."""
    issues = getattr(exc, "issues", ())
    path = issues[0].path if issues and isinstance(issues[0].path, str) else ""
    tokens = jsonpointer.split(path) or []
    if tokens and tokens[0] in OPTION_FLAGS:
        return ConfigFault(OPTION_FLAGS[tokens[0]], None, str(exc.code), str(exc.message))
    return ConfigFault(file, path, str(exc.code), str(exc.message))


async def _serve(
    config: dict[str, Any],
    http: tuple[str, int] | None,
    file: str,
    http_options: dict[str, Any],
    abandon: Callable[[int], NoReturn],
) -> int:
    import asyncio  # start-up cost, as in main()

    # Start-up cost: the server brings the MCP SDK, starlette and uvicorn, which a
    # configuration refused at start (D-MCP-013) or --help never needs.
    from intentref.mcp.server import serve_intent_mcp, serve_intent_mcp_http

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):  # spec: R-SRV-008
        loop.add_signal_handler(signum, stop.set)
    try:
        try:
            if http is None:
                service = await serve_intent_mcp(config)
            else:
                service = await serve_intent_mcp_http(config, http[0], http[1], **http_options)
                # The one line a supervisor (or a test) needs to find the endpoint; stderr,
                # because stdout is reserved for protocol bytes in every mode.
                print(f"{PROG}: serving streamable HTTP at {service.url}", file=sys.stderr, flush=True)
        except IntentParseError as exc:
            fault = _bridge_fault(file, exc)
            print(fault.line(), file=sys.stderr, flush=True)
            return EXIT_CONFIG
        except OSError as exc:
            print(f"{PROG}: cannot serve: {exc}", file=sys.stderr, flush=True)
            return EXIT_FAILURE
        ended = asyncio.create_task(service.wait_closed())
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({ended, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        closing = asyncio.create_task(service.close())
        await asyncio.wait({closing}, timeout=STOP_BUDGET_SECONDS)
        if not closing.done():
            # D-MCP-023: the SDK is still ending sessions one by one.  The Bridge is closed
            # (every job released) and the process ends now: what is left is memory only.
            service.bridge.close()
            abandon(EXIT_OK)
        if ended.done() and not ended.cancelled() and ended.exception() is not None:
            logger.error("serving failed", exc_info=ended.exception())
            return EXIT_FAILURE
        ended.cancel()
        return EXIT_OK
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


def _per_client_fault(args: argparse.Namespace) -> ConfigFault | None:
    """D-MCP-025: --max-jobs-per-client above half of the Bridge's job slots, found before any work.

    The slots are what the Bridge will have: the smaller of maxJobs and maxReplayEntries,
    from their flags or the Bridge's defaults.  A flag the Bridge will refuse anyway is left
    to that refusal (D-MCP-013), which names the flag itself.
    """
    slots = min(
        DEFAULT_MAX_JOBS if args.maxJobs is None else args.maxJobs,
        DEFAULT_MAX_REPLAY_ENTRIES if args.maxReplayEntries is None else args.maxReplayEntries,
    )
    if not 1 <= slots <= MAX_OPTION_VALUE:
        return None
    message = per_client_fault(args.max_jobs_per_client, slots)
    return None if message is None else ConfigFault("--max-jobs-per-client", None, "CONFIG_INVALID", message)


def _auth_usage_error(args: argparse.Namespace) -> str | None:
    """The one-line usage error in the --auth-* flags (D-MCP-032), or None."""
    if args.auth_resource is not None and args.auth_tokens is None and args.auth_jwks is None:
        return "--auth-resource applies with --auth-tokens or --auth-jwks only."
    if args.auth_jwks is None:
        given = "--auth-issuer" if args.auth_issuer is not None else "--auth-audience" if args.auth_audience else None
        return None if given is None else f"{given} applies to --auth-jwks only."
    if args.auth_issuer is None or not args.auth_audience:
        return "--auth-jwks needs --auth-issuer URL and --auth-audience AUD: a token must come from that issuer for this server."
    return None


def _authorization(args: argparse.Namespace) -> dict[str, Any]:
    """The token verifier the --auth-* flags ask for, read and checked before serving (D-MCP-030)."""
    if args.auth_tokens is None and args.auth_jwks is None:
        return {}
    # Only an authorized server needs the JOSE library and the SDK's auth parts at start.
    import jwt

    from intentref.mcp.auth import AuthFault, JwtTokens, StaticTokens

    resource = {"auth_resource": args.auth_resource}  # spec: D-MCP-033
    if args.auth_tokens is not None:
        try:
            return {"token_verifier": StaticTokens.parse(_read_config_bytes(args.auth_tokens)), **resource}
        except AuthFault as fault:
            raise ConfigFault(args.auth_tokens, fault.pointer, "CONFIG_INVALID", str(fault)) from None
    keys: jwt.PyJWKSet | str = args.auth_jwks
    if not args.auth_jwks.startswith(("http://", "https://")):
        try:
            keys = jwt.PyJWKSet.from_json(_read_config_bytes(args.auth_jwks).decode("utf-8", "replace"))
        except (jwt.PyJWTError, ValueError) as exc:
            raise ConfigFault(args.auth_jwks, "", "CONFIG_INVALID", f"not a usable JWK Set: {exc}") from None
    return {"token_verifier": JwtTokens(keys, args.auth_issuer, args.auth_audience), "auth_issuer": args.auth_issuer, **resource}


class _UsageLine(Exception):
    """A mistake in the flags: one line and status 2, found before the configuration is read."""


def _http_options(args: argparse.Namespace) -> dict[str, Any]:
    """What the HTTP flags ask of the server, checked before any work (D-MCP-013)."""
    given = [flag for name, flag in HTTP_FLAGS.items() if getattr(args, name) is not None]
    if args.http is None and given:
        raise _UsageLine(f"{given[0]} applies to --http only; stdio has one client.")
    http_options: dict[str, Any] = {}
    if args.max_jobs_per_client is not None:
        if (fault := _per_client_fault(args)) is not None:
            raise fault
        http_options["max_jobs_per_client"] = args.max_jobs_per_client
    if args.job_idle_seconds is not None:
        http_options["job_idle_seconds"] = args.job_idle_seconds or None  # 0: never
    if args.max_calls_per_second is not None:
        http_options["max_calls_per_second"] = args.max_calls_per_second or None  # 0: no limit
    if (usage := _auth_usage_error(args)) is not None:
        raise _UsageLine(usage)
    http_options.update(_authorization(args))
    if args.http is not None and not is_loopback(args.http[0]):
        if not args.allow_remote:
            # spec: D-MCP-019 -- a usage error, one line, found before the configuration is read.
            raise _UsageLine(f"--http {args.http[0]} is not a loopback address; binding it needs --allow-remote.")
        if "token_verifier" not in http_options:
            if not args.allow_unauthenticated:
                # spec: D-MCP-035 -- serving other hosts without authorization is asked for by name.
                raise _UsageLine(
                    "--allow-remote needs --auth-tokens or --auth-jwks, so that peers are "
                    "authenticated, or --allow-unauthenticated to serve any peer on purpose."
                )
            print(f"{PROG}: " + REMOTE_WARNING.format(host=args.http[0]), file=sys.stderr, flush=True)
    return http_options


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed usage on stderr (status 2) or --help (0)
        return int(exc.code) if isinstance(exc.code, int) else EXIT_CONFIG
    try:
        http_options = _http_options(args)
        logging.basicConfig(
            stream=sys.stderr, level=logging.WARNING, format=f"{PROG}: %(levelname)s %(name)s: %(message)s"
        )
        instances = build_instances(args.config)
    except _UsageLine as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr, flush=True)
        return EXIT_CONFIG
    except ConfigFault as fault:
        print(fault.line(), file=sys.stderr, flush=True)
        return EXIT_CONFIG
    config: dict[str, Any] = {"instances": instances}
    for option in OPTION_FLAGS:
        value = getattr(args, option)
        if value is not None:
            config[option] = value

    def abandon(code: int) -> NoReturn:
        # Leave without the event loop's own teardown, which would cancel and await every
        # remaining SDK task: release what the command built, flush, and end the process.
        dispose_instances(instances)
        logging.shutdown()
        sys.stderr.flush()
        os._exit(code)

    # asyncio is imported only to serve: a configuration refused at start never needs it (D-MCP-013).
    import asyncio

    try:
        return asyncio.run(_serve(config, args.http, args.config, http_options, abandon))
    except KeyboardInterrupt:  # a second Ctrl-C while stopping
        return EXIT_OK
    finally:
        dispose_instances(instances)  # the command built them, so it releases them (seed 000 "MCP 服务")


if __name__ == "__main__":  # pragma: no cover - `python -m intentref.mcp.cli`
    sys.exit(main())
