"""Add a user who may sign in when the app listens beyond loopback, change their password, or make them an API key.

    .venv/bin/python scripts/add_user.py alice             # asks for the password twice
    echo "$PW" | .venv/bin/python scripts/add_user.py alice --password-stdin
    .venv/bin/python scripts/add_user.py alice --delete          # their sign-in and their API keys, at once
    .venv/bin/python scripts/add_user.py alice --key laptop-script  # prints a new API key of theirs, once
    .venv/bin/python scripts/add_user.py alice --keys            # lists their keys (ids, names, last use)
    .venv/bin/python scripts/add_user.py alice --revoke KEY_ID   # revokes one of their keys

Writes to the history database the app uses (CHAT_HISTORY_DB or CHAT_DATABASE_URL, from .env as the app reads
it); only a salted scrypt hash of the password is stored, and only a SHA-256 of a key (history/keys.py says why).
"""

import argparse
import asyncio
import getpass
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import text  # noqa: E402

from engine.errors import SettingsError  # noqa: E402
from engine.settings import load_settings  # noqa: E402
from history import keys, tables  # noqa: E402
from history.schema import open_database, prepare, where  # noqa: E402
from engine.who import LOCAL, RESERVED_NAMES  # noqa: E402
from web.signin import hash_password  # noqa: E402

MIN_PASSWORD = 8


def read_password(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\n")
    first = getpass.getpass("Password: ")
    if getpass.getpass("Again: ") != first:
        raise SystemExit("The two passwords differ; nothing was changed.")
    return first


async def write(url: str, statement: str, values: dict, *more: str) -> int:
    """Run `statement` and then each of `more` with `values`, in one transaction; the first one's row count."""
    database = open_database(url)
    try:
        async with database.begin() as connection:
            count = (await connection.execute(text(statement), values)).rowcount
            for then in more:
                await connection.execute(text(then), values)
            return count
    finally:
        await database.dispose()


async def read(url: str, statement: str, values: dict) -> list[dict]:
    database = open_database(url)
    try:
        async with database.begin() as connection:
            return [dict(row._mapping) for row in (await connection.execute(text(statement), values)).fetchall()]
    finally:
        await database.dispose()


def is_user(url: str, name: str) -> bool:
    """Whether `name` may hold keys: a user with a sign-in, or the local user of a loopback server."""
    return name == LOCAL or bool(asyncio.run(read(url, tables.LOGIN_EXISTS, {"name": name})))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the name the user signs in with")
    parser.add_argument("--password-stdin", action="store_true", help="read the password from the first line of stdin")
    parser.add_argument("--delete", action="store_true", help="remove the user's sign-in (their chats stay)")
    parser.add_argument("--key", metavar="KEY_NAME", help="make an API key of the user's, named KEY_NAME, and print "
                                                          "it (shown only this once); the password stays as it is")
    parser.add_argument("--keys", action="store_true", help="list the user's API keys")
    parser.add_argument("--revoke", metavar="KEY_ID", help="revoke one of the user's API keys (an id from --keys)")
    args = parser.parse_args()
    if not args.name.strip() or len(args.name) > 100:
        raise SystemExit("The name must be 1 to 100 characters.")
    adding = not (args.delete or args.keys or args.revoke)
    if args.name in RESERVED_NAMES and (adding or args.key is not None):
        raise SystemExit(f"{args.name!r} is a name the app keeps for itself ({', '.join(RESERVED_NAMES)}): choose "
                         "another; operators are named in CHAT_ADMINS. Nothing was changed.")
    try:
        settings = load_settings()
    except SettingsError as error:
        raise SystemExit(str(error))
    url = prepare(settings)
    if args.delete:  # their keys too, in the same transaction: from the next request on, nothing of theirs answers
        removed = asyncio.run(write(url, tables.REMOVE_LOGIN, {"name": args.name}, keys.REVOKE_ALL))
        print(f"Removed {args.name!r} and their API keys; a signed-in page of theirs is refused from its next request."
              if removed else f"There is no user {args.name!r}; nothing was changed.")
        return
    if args.keys:
        listed = asyncio.run(read(url, keys.LIST, {"user": args.name}))
        lines = [f"{row['id']}  {row['name']}  made {str(row['created_at'])[:16]}  last used "
                 f"{str(row['last_used_at'] or 'never')[:16]}" for row in listed]
        print("\n".join(lines) or f"{args.name!r} has no API keys.")
        return
    if args.revoke:
        revoked = asyncio.run(write(url, keys.REVOKE, {"id": args.revoke, "user": args.name}))
        print(f"Revoked {args.name!r}'s key {args.revoke}." if revoked else
              f"{args.name!r} has no key {args.revoke!r} (see --keys); nothing was changed.")
        return
    if args.key is not None:
        if not is_user(url, args.name):
            raise SystemExit(f"There is no user {args.name!r}: add them first (`python scripts/add_user.py "
                             f"{args.name}`). Nothing was changed.")
        try:
            key, statement, values = keys.add_statement(args.name, args.key)
        except keys.KeyRefused as why:
            raise SystemExit(f"{why} Nothing was changed.")
        asyncio.run(write(url, statement, values))
        print(f"A new API key of {args.name!r}, named {values['name']!r} (copy it now: it is shown only this once; "
              f"the user revokes it with the chat's Keys command):\n{key}")
        return
    password = read_password(args.password_stdin)
    if len(password) < MIN_PASSWORD:
        raise SystemExit(f"The password must have at least {MIN_PASSWORD} characters; nothing was changed.")
    asyncio.run(write(url, tables.ADD_LOGIN, {"name": args.name, "hash": hash_password(password)}))
    print(f"{args.name!r} can sign in now ({where(settings)}).")


if __name__ == "__main__":
    main()
