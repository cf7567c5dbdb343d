"""``bookmarks``: a command-line device built on :class:`~bookmark_client.BookmarkClient`.

Each invocation opens the profile, does one thing and exits. Errors are one line on stderr, never a
traceback (set ``BOOKMARKS_DEBUG=1`` to get one), with an exit code a script can branch on:

====  ==========================================================
0     success
1     the server refused the request, or a local validation error
2     bad command line (argparse)
3     the server cannot be reached (local writes stay queued)
4     not signed in, or the session expired: run ``bookmarks login``
130   interrupted (Ctrl-C), except for ``watch`` where Ctrl-C is the normal way out (0)
141   the output pipe was closed by its reader (as a tool killed by SIGPIPE)
====  ==========================================================
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import sys
import threading
import time
import traceback
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, BinaryIO

import httpx

from bookmark_client import views
from bookmark_client.client import MAX_RESTORED_PER_CALL, BookmarkClient
from bookmark_client.errors import ApiError, NotSignedIn, Offline, PendingChanges, SessionExpired
from bookmark_client.fields import HIGHLIGHT_COLORS
from bookmark_client.models import (
    Bookmark,
    Collection,
    DuplicateGroup,
    ImportRecord,
    PageProgress,
    RejectedOp,
    TrashItem,
)
from bookmark_client.tree import collection_names, walk
from bookmark_client.ui import Bar, Ui, clean

__all__ = ["build_parser", "main"]

DEFAULT_SERVER = "http://127.0.0.1:8080"
IMPORT_FORMATS = ("auto", "netscape", "pocket-csv", "omnivore", "instapaper-csv", "raindrop-csv", "json")
DEFAULT_PROFILE = "~/.bookmarks-client/default.sqlite"

EXPORT_FORMATS = ("netscape", "json", "csv", "markdown", "annotations")
CAPTURE_MAX_BYTES = 10 * 1024 * 1024

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_OFFLINE = 3
EXIT_SESSION = 4
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141

# Extra advice for server error codes a user can act on.
_HINTS = {
    "consent-required": "enable AI enrichment with `bookmarks settings --use-ai on`",
    "quota-exceeded": "the free enrichment quota is used up; try again later",
    "rate-limited": "too many requests; try again shortly",
    "invalid-identity-token": "the identity token was not accepted (expired, or for another audience?)",
    "identity-already-in-use": "this identity belongs to another account that cannot be merged",
}


class _Fail(Exception):
    """A handled failure: message for stderr and the exit code."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


def _on_off(value: str) -> bool:
    lowered = value.lower()
    if lowered in ("on", "true", "yes", "1"):
        return True
    if lowered in ("off", "false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError("expected on or off")


def _positive(value: str) -> float:
    number = float(value)
    if number <= 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return number


def build_parser(environ: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    env = os.environ if environ is None else environ
    server_default = env.get("BOOKMARKS_SERVER") or DEFAULT_SERVER

    def add_globals(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
        # The global options are accepted before or after the subcommand; on the subcommand they
        # default to SUPPRESS so they do not overwrite a value given before it.
        parser.add_argument(
            "--server",
            default=server_default if defaults else argparse.SUPPRESS,
            help=f"service base URL (default: $BOOKMARKS_SERVER or {DEFAULT_SERVER})",
        )
        parser.add_argument(
            "--profile",
            default=DEFAULT_PROFILE if defaults else argparse.SUPPRESS,
            help=f"local profile database (default: {DEFAULT_PROFILE})",
        )

    parser = argparse.ArgumentParser(prog="bookmarks", description="Bookmark sync and enrichment client.")
    add_globals(parser, defaults=True)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        add_globals(sub, defaults=False)
        return sub

    login = command("login", "sign in (anonymously by default) and sync")
    how = login.add_mutually_exclusive_group()
    how.add_argument("--anonymous", action="store_true", help="create an anonymous account (default)")
    how.add_argument("--idp-a-token", metavar="TOKEN", help="sign in with an identity token of provider A")
    how.add_argument("--code", metavar="CODE", help="join the account of a pairing code (`bookmarks pair`)")
    login.add_argument("--link", action="store_true", help="attach the identity to the current account")
    login.add_argument("--force", action="store_true", help="sign in anew even if already signed in")

    add = command("add", "save a bookmark (offline-safe) and sync it")
    add.add_argument("url")
    add.add_argument("--title")
    add.add_argument("--id", dest="bookmark_id", metavar="ID", help="bookmark id (default: a new UUID)")
    add.add_argument("--favorite", action="store_true")
    add.add_argument("--notes")
    add.add_argument(
        "--tag", dest="tags", action="append", default=[], metavar="TAG", help="a tag of yours (repeatable)"
    )
    add.add_argument(
        "--collection",
        dest="collections",
        action="append",
        default=[],
        metavar="C",
        help="file into C (id or name; a name nothing has yet creates it)",
    )
    add.add_argument("--archived", action="store_true", help="save it as already read")
    add.add_argument("--enrich", action="store_true", help="also queue AI enrichment")

    listing = command("list", "show the local bookmarks")
    listing.add_argument("--json", action="store_true", help="print JSON records instead of a table")
    listing.add_argument("--all", action="store_true", help="include deleted bookmarks")
    archived = listing.add_mutually_exclusive_group()
    archived.add_argument("--archived", action="store_true", help="only archived bookmarks")
    archived.add_argument("--unarchived", action="store_true", help="only bookmarks not archived")
    listing.add_argument("--tag", help="only bookmarks with this tag (yours or the AI's; any case)")
    listing.add_argument("--collection", metavar="C", help="only bookmarks in collection C (id or name)")

    delete = command("delete", "delete a bookmark (offline-safe); it stays in the trash a while: `bookmarks restore`")
    delete.add_argument("bookmark_id", metavar="ID")

    tag = command("tag", "add tags of yours to a bookmark (or remove them)")
    tag.add_argument("bookmark_id", metavar="ID")
    tag.add_argument("tags", nargs="+", metavar="TAG")
    tag.add_argument("--remove", action="store_true", help="remove these tags instead (any case)")

    archive = command("archive", "mark a bookmark as archived (read)")
    archive.add_argument("bookmark_id", metavar="ID")
    archive.add_argument("--undo", action="store_true", help="move it back to the unread list")

    file = command("file", "file a bookmark into collections (or take it out)")
    file.add_argument("bookmark_id", metavar="ID")
    file.add_argument("collections", nargs="+", metavar="C", help="collection id or name (a new name creates it)")
    file.add_argument("--remove", action="store_true", help="take it out of these collections instead")

    _collections_parser(
        command("collections", "show the collections as a tree (no ACTION), or change them"), add_globals
    )

    search = command("search", 'search your bookmarks on the server (words, "phrases", -word, tag:, is:, …)')
    search.add_argument("query", nargs="+", metavar="QUERY", help="the query (words are joined by spaces)")
    search.add_argument("--limit", type=int, default=20, metavar="N", help="at most N results (1-100, default 20)")
    search.add_argument("--json", action="store_true", help="print the results as JSON")

    _trash_parsers(command)
    _duplicates_parsers(command)
    _highlight_parsers(command)

    command("sync", "send queued changes, then pull the server's changes")
    command("watch", "stay connected and sync on every change notification (Ctrl-C to stop)")

    enrich = command("enrich", "queue AI enrichment of a bookmark")
    enrich.add_argument("bookmark_id", metavar="ID")
    enrich.add_argument("--wait", action="store_true", help="print status changes until completed or failed")
    enrich.add_argument("--interval", type=_positive, default=1.0, help="seconds between status polls")
    enrich.add_argument("--timeout", type=_positive, default=600.0, help="give up waiting after this many seconds")

    check = command("check", "ask the server to check a bookmark's link now (the result comes with a later sync)")
    check.add_argument("target", metavar="ID|URL", help="the bookmark's id, or its URL (any spelling)")

    imports = command("import", "import an export file (browser, Pocket, Omnivore, Instapaper, Raindrop, JSON)")
    imports.add_argument("file", metavar="FILE")
    imports.add_argument(
        "--format", default="auto", choices=IMPORT_FORMATS, help="the file's format (default: detected)"
    )
    imports.add_argument("--interval", type=_positive, default=1.0, help="seconds between progress polls")

    settings = command("settings", "show or change account settings")
    settings.add_argument("--use-ai", type=_on_off, metavar="on|off", help="consent to AI enrichment")

    export = command("export", "write the server's export of the whole library to stdout (progress on stderr)")
    export.add_argument("--format", dest="fmt", required=True, choices=EXPORT_FORMATS, help="file format")

    _pairing_and_capture_parsers(command)

    logout = command("logout", "revoke the session and wipe the local profile")
    logout.add_argument("--discard-pending", action="store_true", help="log out even if changes are not synced")
    return parser


def _trash_parsers(command: Any) -> None:
    trash = command(
        "trash", "show the deleted bookmarks the server keeps (the trash; times in UTC), or delete them for good"
    )
    trash.add_argument("--json", action="store_true", help="print the trash as JSON records")
    purge = trash.add_mutually_exclusive_group()
    purge.add_argument("--empty", action="store_true", help="delete everything in the trash for good")
    purge.add_argument("--purge", metavar="ID", help="delete bookmark ID of the trash for good")
    trash.add_argument("--yes", action="store_true", help="with --empty: do not ask for confirmation")
    restore = command("restore", "bring deleted bookmarks back from the trash, then sync")
    which = restore.add_mutually_exclusive_group(required=True)
    which.add_argument("bookmark_id", nargs="?", metavar="ID", help="the bookmark to restore")
    which.add_argument(
        "--since",
        type=_since,
        metavar="TIME",
        help="restore everything deleted since TIME: an ISO timestamp (local time unless it names its zone) "
        "or a time ago: 30m, 2h, 3d, 1w",
    )


def _duplicates_parsers(command: Any) -> None:
    duplicates = command("duplicates", "show groups of bookmarks that are one link saved more than once (times in UTC)")
    duplicates.add_argument("--json", action="store_true", help="print the groups as JSON records")
    merge = command(
        "merge",
        "merge duplicates into the bookmark KEEP (it receives their tags, collections and notes); the others go "
        "to the trash, then sync",
    )
    merge.add_argument("keep", metavar="KEEP", help="the bookmark to keep")
    merge.add_argument("merge", nargs="+", metavar="ID", help="the duplicates of KEEP to merge into it")


def _highlight_parsers(command: Any) -> None:
    highlights = command("highlights", "show the highlights, newest first: all of them or one bookmark's")
    highlights.add_argument("bookmark_id", nargs="?", metavar="BOOKMARK", help="only this bookmark's (its id)")
    highlights.add_argument("--json", action="store_true", help="print JSON records instead")
    highlights.add_argument("--all", action="store_true", help="include deleted highlights")
    highlight = command(
        "highlight", "highlight a passage of a bookmark (offline-safe), or change or delete a highlight"
    )
    highlight.add_argument("bookmark_id", nargs="?", metavar="BOOKMARK", help="the bookmark's id")
    highlight.add_argument("quote", nargs="?", metavar="QUOTE", help="the passage, as it reads on the page")
    highlight.add_argument("--note", metavar="N", help="your note on the passage")
    highlight.add_argument("--color", choices=HIGHLIGHT_COLORS, help="its colour (default: yellow)")
    highlight.add_argument(
        "--id", dest="highlight_id", metavar="ID", help="the new highlight's id (default: a new UUID)"
    )
    which = highlight.add_mutually_exclusive_group()
    which.add_argument("--edit", metavar="ID", help="change the note or colour of highlight ID")
    which.add_argument("--delete", metavar="ID", help="delete highlight ID")


_AGO = re.compile(r"(\d+)\s*([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def _since(value: str, *, now: datetime | None = None) -> datetime:
    """``--since``: ``2h`` (a time ago: s, m, h, d, w) or an ISO timestamp; naive means local time."""
    ago = _AGO.fullmatch(value.strip().lower())
    if ago is not None:
        moment = (now or datetime.now(UTC)) - timedelta(seconds=int(ago.group(1)) * _UNIT_SECONDS[ago.group(2)])
        return moment.astimezone(UTC)
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is neither a time ago (30m, 2h, 3d, 1w) nor an ISO timestamp (2026-11-28T09:00)"
        ) from None
    return (moment if moment.tzinfo is not None else moment.astimezone()).astimezone(UTC)


def _pairing_and_capture_parsers(command: Any) -> None:
    command("pair", "show a one-time code that signs another device into this account")
    capture = command("capture", "enrich a bookmark from a saved page (HTML the server cannot fetch itself)")
    capture.add_argument("url", help="the page's address")
    capture.add_argument("--file", required=True, metavar="FILE", help="the page as saved by a browser (HTML)")
    capture.add_argument(
        "--id", dest="bookmark_id", metavar="ID", help="bookmark id (default: the URL's, or a new one)"
    )
    capture.add_argument("--title", help="the page's title (default: read from the HTML)")


def _collections_parser(parser: argparse.ArgumentParser, add_globals: Any) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON records (in tree order, with level)")
    parser.add_argument("--all", action="store_true", help="include deleted collections")
    actions = parser.add_subparsers(dest="collections_command", metavar="ACTION")

    def action(name: str, help_text: str, id_help: str = "collection id or name") -> argparse.ArgumentParser:
        sub = actions.add_parser(name, help=help_text, description=help_text)
        add_globals(sub, defaults=False)
        sub.add_argument("collection_id", metavar="ID", help=id_help)
        return sub

    add = action("add", "create a collection (offline-safe)", "the new collection's id (letters, digits, - and _)")
    add.add_argument("name", metavar="NAME")
    add.add_argument("--parent", metavar="P", help="id or name of the collection to create it in")
    action("rename", "rename a collection").add_argument("name", metavar="NAME")
    move = action("move", "move a collection into another one, or to the top level")
    where = move.add_mutually_exclusive_group(required=True)
    where.add_argument("--parent", metavar="P", help="id or name of the new parent")
    where.add_argument("--top", action="store_true", help="make it a top-level collection")
    action("rm", "delete a collection: its children move up, its bookmarks stay (unfiled from it)")


_UI: Ui | None = None


def _ui() -> Ui:
    """The output layer of this run (made on first use for callers that skip :func:`main`)."""
    global _UI
    if _UI is None:
        _UI = Ui(sys.stdout, sys.stderr)
    return _UI


def main(argv: Sequence[str] | None = None, *, transport: httpx.AsyncBaseTransport | None = None) -> int:
    """Run one command. ``transport`` replaces the network (tests serve a fake service through it)."""
    global _UI
    command: str | None = None
    try:
        args = build_parser().parse_args(argv)
        command = args.command
        _UI = Ui(sys.stdout, sys.stderr)
        if command == "watch":
            _take_ctrl_c()
        # asyncio.run turns Ctrl-C into a cancellation of the command, so every cleanup runs.
        return asyncio.run(_run(args, transport))
    except KeyboardInterrupt:
        if command == "watch":
            _out("stopped")
            return EXIT_OK
        return EXIT_INTERRUPTED


def _take_ctrl_c() -> None:
    """Let SIGINT reach ``watch`` even when it was started with SIGINT ignored.

    A shell without job control (a script, CI) starts ``bookmarks watch &`` with SIGINT ignored and the
    process inherits that; Ctrl-C is watch's way out, so it would keep running until killed.
    """
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


async def _run(args: argparse.Namespace, transport: httpx.AsyncBaseTransport | None) -> int:
    try:
        async with BookmarkClient(args.server, store_path=args.profile, transport=transport) as client:
            handler = _HANDLERS[args.command]
            return await handler(client, args)
    except _Fail as exc:
        return _fail(str(exc), exc.code)
    except NotSignedIn:
        return _fail("not signed in; run `bookmarks login`", EXIT_SESSION)
    except SessionExpired as exc:
        return _fail(f"session expired ({exc.message}); run `bookmarks login`", EXIT_SESSION)
    except ApiError as exc:
        return _fail(_describe(exc), EXIT_ERROR)
    except Offline:
        return _fail(f"cannot reach the server at {args.server}", EXIT_OFFLINE)
    except PendingChanges as exc:
        return _fail(f"{exc}; run `bookmarks sync`, or pass --discard-pending to drop them", EXIT_ERROR)
    except (ValueError, LookupError) as exc:
        return _fail(str(exc).strip("'\""), EXIT_ERROR)
    except BrokenPipeError:  # the reader went away (`bookmarks list | head`): stop quietly, as tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE
    except Exception as exc:  # the promise is one line, not a traceback; BOOKMARKS_DEBUG=1 shows it
        if os.environ.get("BOOKMARKS_DEBUG"):
            traceback.print_exc()
        return _fail(f"{type(exc).__name__}: {exc}", EXIT_ERROR)


def _describe(exc: ApiError) -> str:
    hint = _HINTS.get(exc.code)
    text = f"{exc.message} ({exc.code})"
    return f"{text}; {hint}" if hint else text


def _out(line: str) -> None:
    _ui().line(line)


def _fail(message: str, code: int) -> int:
    _ui().error(message)
    return code


def _user_label(client: BookmarkClient) -> str:
    user = client.user
    if user is None:
        return "nobody"
    if user.is_anonymous:
        return f"{user.id} (anonymous)"
    name = user.display_name or user.email
    return f"{name} ({user.id})" if name else user.id


# -- commands ------------------------------------------------------------------------------------


async def _login(client: BookmarkClient, args: argparse.Namespace) -> int:
    if args.link and not args.idp_a_token:
        raise _Fail("--link needs --idp-a-token")
    if client.user is not None and not args.link and not args.force:
        # A new sign-in as someone else wipes this profile's data (and any unsynced change).
        raise _Fail(
            f"already signed in as {_user_label(client)}; use --link to attach an identity to this account, "
            "--force to sign in anew, or `bookmarks logout` first"
        )
    if args.idp_a_token:
        await client.sign_in_with_idp_a(args.idp_a_token, link=args.link)
    elif args.code:
        await client.claim_pairing_code(args.code)
    else:
        await client.sign_in_anonymously()
    _out(f"signed in as {_user_label(client)}")
    try:
        result = await client.flush(max_retries=0)
    except Offline:
        _out("sync postponed: the server cannot be reached")
        return EXIT_OK
    _print_flush(result.sent, result.rejected)
    if result.sync is not None:
        _out(f"synced: {len(await client.list_bookmarks())} bookmark(s)")
    return EXIT_OK


def _require_user(client: BookmarkClient) -> None:
    # Checked before the local write: a change nobody can send would only linger in the queue.
    if client.user is None:
        raise NotSignedIn()


async def _flush_write(client: BookmarkClient, record_id: str, done: str) -> int | None:
    """Send the queue after a local write: prints ``done`` once the server has it, or that it is queued.

    Returns an exit code to stop with, or None when the write reached the server and the command may go on.
    """
    try:
        result = await client.flush(max_retries=0)
    except Offline:
        pending = len(await client.pending_operations())
        _out(f"saved {record_id} offline ({pending} change(s) queued; run `bookmarks sync` when online)")
        return EXIT_OK
    _print_flush(0, result.rejected)
    if any(r.bookmark_id == record_id for r in result.rejected):
        return EXIT_ERROR
    _out(done)
    return None


async def _find_collection(client: BookmarkClient, given: str) -> str | None:
    collections = await client.list_collections()
    if any(c.id == given for c in collections):
        return given
    named = [c for c in collections if c.name.casefold() == given.strip().casefold()]
    if len(named) > 1:
        ids = ", ".join(c.id for c in named)
        raise _Fail(f"{len(named)} collections are named {given!r} ({ids}); give the id")
    return named[0].id if named else None


async def _collection_id(client: BookmarkClient, given: str, *, must_exist: bool) -> str:
    """A collection named on the command line by id or (unambiguous, any case) by name.

    Unless ``must_exist``, a name nothing answers to creates that collection (a queued create, so offline
    too): after a sync first, when the server can be reached, so one made on another device is found.
    """
    found = await _find_collection(client, given)
    if found is not None:
        return found
    if must_exist:
        raise _Fail(f"no collection {given!r} here (run `bookmarks collections` to see them)")
    try:
        await client.sync()
    except Offline:
        pass
    found = await _find_collection(client, given)
    if found is not None:
        return found
    created = await client.put_collection(str(uuid.uuid4()), {"name": given.strip()})
    _out(f"created collection {created.name} ({created.id})")
    return created.id


async def _add(client: BookmarkClient, args: argparse.Namespace) -> int:
    if client.user is None:
        raise NotSignedIn()
    bookmark_id = args.bookmark_id or str(uuid.uuid4())
    fields: dict[str, Any] = {"url": args.url}
    if args.title is not None:
        fields["title"] = args.title
    if args.notes is not None:
        fields["notes"] = args.notes
    if args.favorite:
        fields["isFavorite"] = True
    if args.archived:
        fields["isArchived"] = True
    if args.tags:
        fields["userTags"] = args.tags
    if args.collections:
        fields["collectionIds"] = [await _collection_id(client, c, must_exist=False) for c in args.collections]
    if args.title is None:
        fields |= await _previewed(client, args.url, fields)
    await client.put_bookmark(bookmark_id, fields)
    stop = await _flush_write(client, bookmark_id, f"added {bookmark_id}: {args.url}")
    if fields.get("title"):
        _out(f"title: {fields['title']}")
    if stop is not None:
        if args.enrich and stop == EXIT_OK:
            raise _Fail("enrichment needs the server, which cannot be reached", EXIT_OFFLINE)
        return stop
    if args.enrich:
        enqueued = await client.enrich(bookmark_id)
        _out(f"enrichment: {enqueued.status}" + (" (cached result applied)" if enqueued.cache_hit else ""))
    return EXIT_OK


async def _previewed(client: BookmarkClient, url: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The page's title, description and picture for a new bookmark, or nothing when they cannot be had
    (offline, a refused URL, the preview limit): the bookmark is saved either way."""
    try:
        with _ui().status("Fetching title…"):
            found = await client.preview(url)
    except (Offline, ApiError):
        return {}
    return found.fill(fields)


async def _pair(client: BookmarkClient, args: argparse.Namespace) -> int:
    _require_user(client)
    issued = await client.create_pairing_code()
    expires = issued.expires_at.replace("T", " ").split(".")[0].removesuffix("Z")
    _out(f"pairing code: {issued.code} (single use, valid until {expires} UTC)")
    _out(f"on the other device: bookmarks login --code {issued.code}")
    return EXIT_OK


async def _capture(client: BookmarkClient, args: argparse.Namespace) -> int:
    _require_user(client)
    page = _read_page(args.file)
    bookmark_id = args.bookmark_id or await _bookmark_of_url(client, args.url)
    known = await client.get_bookmark(bookmark_id)
    if known is None or known.deleted:
        await client.put_bookmark(bookmark_id, {"url": args.url})
        stop = await _flush_write(client, bookmark_id, f"added {bookmark_id}: {args.url}")
        if stop == EXIT_OK:  # saved, but only offline: a capture needs the server
            raise _Fail("capturing needs the server, which cannot be reached", EXIT_OFFLINE)
        if stop is not None:
            return stop
    queued = await client.capture(bookmark_id, page, title=args.title)
    _out(f"captured {bookmark_id}: {queued.status}")
    return EXIT_OK


def _read_page(path: str) -> str:
    try:
        with open(path, "rb") as fp:  # noqa: ASYNC230 - one bounded local read
            data = fp.read(CAPTURE_MAX_BYTES + 1)
    except OSError as exc:
        raise _Fail(f"cannot read {path}: {exc.strerror or exc}") from exc
    if len(data) > CAPTURE_MAX_BYTES:
        raise _Fail(f"{path} is larger than 10 MiB, the most a capture may send")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Fail(f"{path} is not UTF-8 text (save the page as HTML with UTF-8 encoding)") from exc


async def _bookmark_of_url(client: BookmarkClient, url: str) -> str:
    """The id of this profile's bookmark of ``url``, else the server's (any spelling), else a new one."""
    for bookmark in await client.list_bookmarks():
        if url in (bookmark.url, bookmark.normalized_url):
            return bookmark.client_bookmark_id
    try:
        found = await client.lookup(url)
    except Offline:
        found = None
    return found.client_bookmark_id if found is not None else str(uuid.uuid4())


async def _filtered(client: BookmarkClient, args: argparse.Namespace) -> list[Bookmark]:
    bookmarks = await client.list_bookmarks(include_deleted=args.all)
    if args.archived or args.unarchived:
        bookmarks = [b for b in bookmarks if b.is_archived == args.archived]
    if args.tag:
        wanted = args.tag.strip().casefold()
        bookmarks = [b for b in bookmarks if wanted in {t.casefold() for t in [*b.user_tags, *b.tags]}]
    if args.collection:
        collection_id = await _collection_id(client, args.collection, must_exist=True)
        bookmarks = [b for b in bookmarks if collection_id in b.collection_ids]
    return bookmarks


async def _list(client: BookmarkClient, args: argparse.Namespace) -> int:
    bookmarks = await _filtered(client, args)
    if args.json:
        _ui().json([b.to_wire() for b in bookmarks])
        return EXIT_OK
    if not bookmarks:
        _out("no bookmarks")
        return EXIT_OK
    views.show_bookmarks(_ui(), bookmarks, await client.list_collections(include_deleted=True))
    return EXIT_OK


async def _delete(client: BookmarkClient, args: argparse.Namespace) -> int:
    _require_user(client)
    known = await client.get_bookmark(args.bookmark_id)
    if known is None or known.deleted:
        raise _Fail(f"no bookmark {args.bookmark_id!r} here")
    await client.delete_bookmark(args.bookmark_id)
    done = f"deleted {args.bookmark_id} (to the trash: `bookmarks restore {args.bookmark_id}` brings it back)"
    return await _flush_write(client, args.bookmark_id, done) or EXIT_OK


async def _tag(client: BookmarkClient, args: argparse.Namespace) -> int:
    _require_user(client)
    if args.remove:
        bookmark = await client.tag_bookmark(args.bookmark_id, remove=args.tags)
    else:
        bookmark = await client.tag_bookmark(args.bookmark_id, add=args.tags)
    tags = ", ".join(bookmark.user_tags) or "(none)"
    return await _flush_write(client, args.bookmark_id, f"{args.bookmark_id}: tags {tags}") or EXIT_OK


async def _archive(client: BookmarkClient, args: argparse.Namespace) -> int:
    _require_user(client)
    await client.archive_bookmark(args.bookmark_id, archived=not args.undo)
    done = f"{'unarchived' if args.undo else 'archived'} {args.bookmark_id}"
    return await _flush_write(client, args.bookmark_id, done) or EXIT_OK


async def _file(client: BookmarkClient, args: argparse.Namespace) -> int:
    _require_user(client)
    bookmark = await client.get_bookmark(args.bookmark_id)
    if bookmark is None or bookmark.deleted:
        raise _Fail(f"no bookmark {args.bookmark_id!r} here")
    given = [await _collection_id(client, c, must_exist=args.remove) for c in args.collections]
    if args.remove:
        ids = [c for c in bookmark.collection_ids if c not in given]
    else:
        ids = [*bookmark.collection_ids, *(c for c in dict.fromkeys(given) if c not in bookmark.collection_ids)]
    bookmark = await client.set_collections(args.bookmark_id, ids)
    by_id = {c.id: c for c in await client.list_collections(include_deleted=True)}
    names = ", ".join(collection_names(bookmark.collection_ids, by_id)) or "(none)"
    return await _flush_write(client, args.bookmark_id, f"{args.bookmark_id}: in {names}") or EXIT_OK


def _tree_lines(collections: list[Collection], bookmarks: list[Bookmark]) -> list[str]:
    counts: dict[str, int] = {}
    for b in bookmarks:
        for collection_id in set(b.collection_ids):
            counts[collection_id] = counts.get(collection_id, 0) + 1
    lines = []
    for level, c in walk(collections):
        count = counts.get(c.id, 0)
        pending = "*" if c.pending else ""
        lines.append(f"{'  ' * (level - 1)}{c.name}  ({c.id}{pending}, {count} bookmark{'' if count == 1 else 's'})")
    if any(c.pending for c in collections if not c.deleted):
        lines.append("* not yet synced")
    return lines


async def _collections(client: BookmarkClient, args: argparse.Namespace) -> int:
    if args.collections_command is not None:
        return await _COLLECTION_ACTIONS[args.collections_command](client, args)
    collections = await client.list_collections(include_deleted=True)
    if args.json:
        records = [{**c.to_wire(), "level": level} for level, c in walk(collections)]
        if args.all:
            records += [{**c.to_wire(), "level": None} for c in collections if c.deleted]
        _ui().json(records)
        return EXIT_OK
    lines = _tree_lines(collections, await client.list_bookmarks())
    if args.all:
        lines += [f"{c.name}  ({c.id}, deleted)" for c in collections if c.deleted]
    for line in lines or ["no collections"]:
        _out(line)
    return EXIT_OK


async def _collection_add(client: BookmarkClient, args: argparse.Namespace) -> int:
    _require_user(client)
    fields: dict[str, Any] = {"name": args.name}
    if args.parent is not None:
        fields["parentId"] = await _collection_id(client, args.parent, must_exist=True)
    created = await client.put_collection(args.collection_id, fields)
    return await _flush_write(client, created.id, f"created collection {created.id}: {created.name}") or EXIT_OK


async def _collection_rename(client: BookmarkClient, args: argparse.Namespace) -> int:
    _require_user(client)
    collection_id = await _collection_id(client, args.collection_id, must_exist=True)
    renamed = await client.put_collection(collection_id, {"name": args.name})
    return await _flush_write(client, renamed.id, f"renamed {renamed.id} to {renamed.name}") or EXIT_OK


async def _collection_move(client: BookmarkClient, args: argparse.Namespace) -> int:
    _require_user(client)
    collection_id = await _collection_id(client, args.collection_id, must_exist=True)
    parent = None if args.top else await _collection_id(client, args.parent, must_exist=True)
    moved = await client.put_collection(collection_id, {"parentId": parent})
    where = "the top level" if parent is None else parent
    return await _flush_write(client, moved.id, f"moved {moved.id} to {where}") or EXIT_OK


async def _collection_rm(client: BookmarkClient, args: argparse.Namespace) -> int:
    _require_user(client)
    # Only what this device knows: a typo must not look like a successful delete (sync first if it is new).
    collection_id = await _collection_id(client, args.collection_id, must_exist=True)
    await client.delete_collection(collection_id)
    return await _flush_write(client, collection_id, f"deleted collection {collection_id}") or EXIT_OK


async def _highlights(client: BookmarkClient, args: argparse.Namespace) -> int:
    bookmarks = {b.client_bookmark_id: b for b in await client.list_bookmarks(include_deleted=True)}
    if args.bookmark_id is not None and args.bookmark_id not in bookmarks:
        raise _Fail(f"no bookmark {args.bookmark_id!r} here")
    highlights = await client.list_highlights(args.bookmark_id, include_deleted=args.all)
    if args.json:
        _ui().json([h.to_wire() for h in highlights])
        return EXIT_OK
    if not highlights:
        _out("no highlights")
        return EXIT_OK
    views.show_highlights(_ui(), highlights, bookmarks)
    return EXIT_OK


async def _highlight(client: BookmarkClient, args: argparse.Namespace) -> int:
    _require_user(client)
    changes: dict[str, Any] = {}
    if args.note is not None:
        changes["note"] = args.note
    if args.color is not None:
        changes["color"] = args.color
    target: str | None = args.delete or args.edit
    if target is not None:
        if args.bookmark_id is not None or args.highlight_id is not None:
            raise _Fail(f"--{'delete' if args.delete else 'edit'} takes a highlight id alone")
        known = await client.get_highlight(target)
        if known is None or known.deleted:
            raise _Fail(f"no highlight {target!r} here (run `bookmarks highlights` to see them)")
        if args.delete is not None:
            if changes:
                raise _Fail("--delete takes no --note or --color")
            await client.delete_highlight(target)
            return await _flush_write(client, target, f"deleted highlight {target}") or EXIT_OK
        if not changes:
            raise _Fail("--edit needs --note or --color")
        changed = await client.put_highlight(target, changes)
        return await _flush_write(client, target, f"changed highlight {target} ({changed.color})") or EXIT_OK
    if args.bookmark_id is None or args.quote is None:
        raise _Fail("give BOOKMARK and QUOTE, or --edit ID, or --delete ID")
    bookmark = await client.get_bookmark(args.bookmark_id)
    if bookmark is None or bookmark.deleted:
        raise _Fail(f"no bookmark {args.bookmark_id!r} here")
    highlight_id = args.highlight_id or str(uuid.uuid4())
    created = await client.put_highlight(highlight_id, {"bookmarkId": args.bookmark_id, "quote": args.quote, **changes})
    title = clean(bookmark.title or bookmark.url).strip()
    return (
        await _flush_write(client, highlight_id, f"highlighted {highlight_id} in {title} ({created.color})") or EXIT_OK
    )


def _print_flush(sent: int, rejected: list[RejectedOp]) -> None:
    if sent:
        _out(f"sent {sent} queued change(s)")
    for r in rejected:
        _out(f"rejected {r.kind} {r.bookmark_id}: {r.message} ({r.code})")


async def _sync(client: BookmarkClient, args: argparse.Namespace) -> int:
    if client.user is None:
        raise NotSignedIn()
    pending = len(await client.pending_operations())
    received = 0
    with _ui().progress() as progress:
        sending = Bar(progress, "sending", "changes", total=pending) if pending else None
        flushed = await client.flush(sync=False, max_retries=2, on_sent=None if sending is None else sending.update)
        pulling = Bar(progress, "pulling", "records")

        def on_page(page: PageProgress) -> None:
            nonlocal received
            received += page.upserts + page.tombstones + page.collections + page.collection_tombstones
            received += page.highlights + page.highlight_tombstones
            pulling.update(received)

        result = await client.sync(on_page=on_page)
        pulling.finish(received)
    _print_flush(flushed.sent, flushed.rejected)
    counts = _counts(result.upserts, result.tombstones, result.collections, result.collection_tombstones)
    if result.highlights or result.highlight_tombstones:
        counts += f", {result.highlights} highlight(s), {result.highlight_tombstones} highlight tombstone(s)"
    changed = len(result.changed_ids) + len(result.changed_collection_ids) + len(result.changed_highlight_ids)
    _out(
        f"synced {result.pages} page(s): {counts}, {changed} changed in {result.elapsed:.2f}s"
        + (" (full resync)" if result.full_resync else "")
    )
    return EXIT_OK


def _counts(upserts: int, tombstones: int, collections: int, collection_tombstones: int) -> str:
    text = f"{upserts} upsert(s), {tombstones} tombstone(s)"
    if collections or collection_tombstones:
        text += f", {collections} collection(s), {collection_tombstones} collection tombstone(s)"
    return text


async def _watch(client: BookmarkClient, args: argparse.Namespace) -> int:
    if client.user is None:
        raise NotSignedIn()
    _out(f"watching {args.server} as {_user_label(client)} (Ctrl-C to stop)")

    async def changed(ids: list[str]) -> None:
        for bookmark_id in ids:
            bookmark = await client.get_bookmark(bookmark_id)
            if bookmark is None or bookmark.deleted:
                _out(f"deleted {bookmark_id}")
            else:
                _out(f"changed {bookmark_id}: {bookmark.title or bookmark.url} [{bookmark.enrichment_status}]")

    async def collections_changed(ids: list[str]) -> None:
        for collection_id in ids:
            collection = await client.get_collection(collection_id)
            if collection is None or collection.deleted:
                _out(f"deleted collection {collection_id}")
            else:
                _out(f"changed collection {collection_id}: {collection.name}")

    async def highlights_changed(ids: list[str]) -> None:
        for highlight_id in ids:
            highlight = await client.get_highlight(highlight_id)
            if highlight is None or highlight.deleted:
                _out(f"deleted highlight {highlight_id}")
            else:
                _out(f"changed highlight {highlight_id}: {clean(highlight.quote).strip()}")

    def error(exc: BaseException) -> None:
        reason = exc.message if isinstance(exc, ApiError | Offline) else (str(exc) or type(exc).__name__)
        _out(f"connection problem: {reason} (retrying)")

    await client.watch(
        changed,
        on_nudge=lambda: _out("nudge: bookmarks_changed"),
        on_connect=lambda: _out("connected"),
        on_error=error,
        on_collection_change=collections_changed,
        on_highlight_change=highlights_changed,
    )
    return EXIT_OK


async def _enrich(client: BookmarkClient, args: argparse.Namespace) -> int:
    bookmark_id: str = args.bookmark_id
    enqueued = await client.enrich(bookmark_id)
    _out(f"{bookmark_id}: {enqueued.status}" + (" (cached result applied)" if enqueued.cache_hit else ""))
    if not args.wait:
        return EXIT_OK
    deadline = time.monotonic() + args.timeout
    last = enqueued.status
    while True:
        job = await client.enrichment_status(bookmark_id)
        if job.status != last:
            _out(f"{bookmark_id}: {job.status}")
            last = job.status
        if job.finished:
            break
        if time.monotonic() >= deadline:
            raise _Fail(f"still {job.status} after {args.timeout:g}s")
        await asyncio.sleep(args.interval)
    if job.status == "failed":
        raise _Fail(f"enrichment failed: {job.error_code or 'unknown error'}")
    # Bring the enriched fields into the local profile too.
    try:
        await client.sync()
    except Offline:
        pass
    if job.result is not None:
        _out(f"  title:   {job.result.title or ''}")
        _out(f"  tags:    {', '.join(job.result.tags)}")
        if job.result.summary:
            _out(f"  summary: {job.result.summary}")
        if job.result.save_why:
            _out(f"  why:     {job.result.save_why}")
    return EXIT_OK


async def _check(client: BookmarkClient, args: argparse.Namespace) -> int:
    _require_user(client)
    target: str = args.target
    bookmark_id = target
    if "://" in target:
        found = await client.lookup(target)
        if found is None:
            raise _Fail(f"no bookmark of {target}")
        bookmark_id = found.client_bookmark_id
    await client.check_link(bookmark_id)
    _out(f"{bookmark_id}: link check queued; `bookmarks sync` later brings its result (LINK in `bookmarks list`)")
    return EXIT_OK


async def _import(client: BookmarkClient, args: argparse.Namespace) -> int:
    """Upload, then poll the Import record, with progress bars; exit 1 when the import failed."""
    _require_user(client)
    with _ui().progress() as progress:
        upload = Bar(progress, "uploading", "bytes")
        record = await client.start_import(args.file, args.format, on_upload=upload.update)
        upload.finish()
        _out(f"import {record.id}: uploaded {views.size(int(upload.completed))}, {record.status}")
        record = await _poll_import(client, record, Bar(progress, "importing", "items", total=record.total), args)
    if record.status == "failed":
        raise _Fail(f"import failed: {record.error or 'unknown error'}")
    _out(
        f"imported {record.processed} item(s) as {record.format}: {record.created} created, "
        f"{record.updated} updated, {record.unchanged} unchanged, {record.invalid} invalid"
    )
    try:  # bring the imported bookmarks into the local profile
        await client.sync()
    except Offline:
        pass
    return EXIT_OK


async def _poll_import(
    client: BookmarkClient, record: ImportRecord, bar: Bar, args: argparse.Namespace
) -> ImportRecord:
    while not record.finished:
        await asyncio.sleep(args.interval)
        record = await client.import_status(record.id)
        bar.update(record.processed, record.total)
    if record.status != "failed":
        bar.finish(record.processed)
    return record


async def _search(client: BookmarkClient, args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= 100:
        raise _Fail("--limit must be between 1 and 100")
    page = await client.search(" ".join(args.query), limit=args.limit)
    if args.json:
        _ui().json([{"bookmark": r.bookmark.to_wire(), "snippet": r.snippet} for r in page.results])
        return EXIT_OK
    if not page.results:
        _out("no results")
        return EXIT_OK
    for number, result in enumerate(page.results, 1):
        views.show_search_result(_ui(), number, result)
    if page.next_cursor:
        _out("(more results: raise --limit, up to 100)")
    return EXIT_OK


async def _send_queue_first(client: BookmarkClient) -> None:
    """Send queued changes before a trash command: a delete made offline is in the trash only once sent."""
    _require_user(client)
    if await client.pending_operations():
        with _ui().status("Sending queued changes…"):
            result = await client.flush(sync=False, max_retries=0)
        _print_flush(result.sent, result.rejected)


async def _all_trash(client: BookmarkClient) -> list[TrashItem]:
    items: list[TrashItem] = []
    cursor: str | None = None
    with _ui().status("Reading the trash…"):
        while True:
            page = await client.list_trash(limit=100, cursor=cursor)
            items += page.items
            cursor = page.next_cursor
            if cursor is None:
                return items


async def _trash(client: BookmarkClient, args: argparse.Namespace) -> int:
    await _send_queue_first(client)
    if args.purge is not None:
        await client.purge_from_trash(args.purge)
        _out(f"deleted {args.purge} for good")
        return EXIT_OK
    if args.empty:
        if not args.yes:
            _confirm("Empty the trash? Everything in it is deleted for good and cannot be restored.")
        with _ui().status("Emptying the trash…"):
            await client.empty_trash()
        _out("the trash is empty")
        return EXIT_OK
    if args.yes:
        raise _Fail("--yes goes with --empty")
    items = await _all_trash(client)
    if args.json:
        _ui().json([item.to_wire() for item in items])
        return EXIT_OK
    if not items:
        _out("the trash is empty")
        return EXIT_OK
    views.show_trash(_ui(), items)
    return EXIT_OK


async def _all_duplicates(client: BookmarkClient) -> list[DuplicateGroup]:
    groups: list[DuplicateGroup] = []
    cursor: str | None = None
    with _ui().status("Looking for duplicates…"):
        while True:
            page = await client.list_duplicates(limit=100, cursor=cursor)
            groups += page.groups
            cursor = page.next_cursor
            if cursor is None:
                return groups


async def _duplicates(client: BookmarkClient, args: argparse.Namespace) -> int:
    await _send_queue_first(client)
    groups = await _all_duplicates(client)
    if args.json:
        _ui().json([group.to_wire() for group in groups])
        return EXIT_OK
    if not groups:
        _out("no duplicates")
        return EXIT_OK
    views.show_duplicates(_ui(), groups)
    return EXIT_OK


async def _merge(client: BookmarkClient, args: argparse.Namespace) -> int:
    await _send_queue_first(client)
    merged = list(dict.fromkeys(args.merge))
    try:
        kept = await client.merge_duplicates(args.keep, merged)
    except ApiError as exc:
        if exc.status == 400 and exc.code == "invalid-request":
            raise _Fail(f"nothing merged: {exc.message} (run `bookmarks duplicates` to see the groups)") from exc
        raise
    _out(f"kept {kept.client_bookmark_id}: {clean(kept.title or kept.url).strip()}")
    others = " ".join(merged)
    _out(
        f"merged {len(merged)} duplicate{'' if len(merged) == 1 else 's'} into it; "
        f"they are in the trash: restore them with `bookmarks restore ID` ({others})"
    )
    return await _sync_after(client)


async def _sync_after(client: BookmarkClient) -> int:
    """A sync after a change made on the server, so this profile has it at once."""
    try:
        with _ui().status("Syncing…"):
            result = await client.sync()
    except Offline:
        _out("sync postponed: the server cannot be reached (run `bookmarks sync`)")
        return EXIT_OK
    _out(f"synced: {len(await client.list_bookmarks())} bookmark(s) ({result.upserts} upsert(s) received)")
    return EXIT_OK


def _confirm(question: str) -> None:
    """Asks on the terminal; refuses without one (a script says --yes)."""
    if not sys.stdin.isatty():
        raise _Fail("this deletes for good: confirm with --yes (there is no terminal to ask on)")
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise _Fail("nothing deleted")


async def _restore(client: BookmarkClient, args: argparse.Namespace) -> int:
    await _send_queue_first(client)
    if args.bookmark_id is not None:
        try:
            restored = await client.restore_from_trash(args.bookmark_id)
        except ApiError as exc:
            if exc.status == 404 and exc.code == "not-found":
                raise _Fail(f"{args.bookmark_id} is not in the trash (run `bookmarks trash` to see it)") from exc
            raise
        _out(f"restored {restored.client_bookmark_id}: {clean(restored.title or restored.url).strip()}")
    else:
        since: datetime = args.since
        total = 0
        with _ui().status("Restoring…"):
            while True:  # the server restores a bounded number per call; what is left comes back on the next
                restored_now = await client.restore_deleted_since(since)
                total += restored_now
                if restored_now < MAX_RESTORED_PER_CALL:
                    break
        when = since.strftime("%Y-%m-%d %H:%M:%S UTC")
        _out(f"restored {total} bookmark{'' if total == 1 else 's'} deleted since {when}")
    return await _sync_after(client)


async def _settings(client: BookmarkClient, args: argparse.Namespace) -> int:
    if args.use_ai is None:
        current = await client.get_settings()
    else:
        current = await client.update_settings(use_ai=args.use_ai)
    _out(f"useAi: {'on' if current.use_ai else 'off'}")
    return EXIT_OK


async def _logout(client: BookmarkClient, args: argparse.Namespace) -> int:
    revoked = await client.logout(discard_pending=args.discard_pending)
    if revoked:
        _out("signed out")
    else:
        _out("signed out locally (the server was not told; the session lapses on its own)")
    return EXIT_OK


_COLLECTION_ACTIONS = {
    "add": _collection_add,
    "rename": _collection_rename,
    "move": _collection_move,
    "rm": _collection_rm,
}


async def _export(client: BookmarkClient, args: argparse.Namespace) -> int:
    """Stream the export to stdout as it arrives (``> file``); progress and a byte count on stderr.

    The progress counts bookmarks against the number in the local profile (the last sync's view)."""
    _require_user(client)
    expected = len(await client.list_bookmarks())
    with _ui().progress(show=not _ui().out_tty) as progress:  # a file printed on the terminal is its own progress
        bar = Bar(progress, "exporting", "bookmarks", total=expected or None)
        counter = views.ExportCounter(args.fmt)
        written = await _copy(client.export(args.fmt), sys.stdout.buffer, lambda chunk: bar.update(counter.feed(chunk)))
        bar.finish(counter.count)
    _ui().note(f"exported {views.size(written)} ({args.fmt})")
    return EXIT_OK


async def _copy(chunks: AsyncIterator[bytes], target: BinaryIO, seen: Callable[[bytes], None]) -> int:
    written = 0
    try:
        async for chunk in chunks:
            target.write(chunk)
            written += len(chunk)
            seen(chunk)
    finally:
        target.flush()
    return written


_HANDLERS = {
    "login": _login,
    "import": _import,
    "add": _add,
    "list": _list,
    "delete": _delete,
    "tag": _tag,
    "archive": _archive,
    "file": _file,
    "collections": _collections,
    "sync": _sync,
    "watch": _watch,
    "enrich": _enrich,
    "check": _check,
    "search": _search,
    "settings": _settings,
    "export": _export,
    "logout": _logout,
    "pair": _pair,
    "capture": _capture,
    "trash": _trash,
    "restore": _restore,
    "duplicates": _duplicates,
    "merge": _merge,
    "highlights": _highlights,
    "highlight": _highlight,
}
