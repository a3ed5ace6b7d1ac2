#!/usr/bin/env python3
"""The official Supabase Python client (supabase-py) against the test stack, with a device credential.

Not part of `make test` (it needs the client from PyPI). Run it beside a stack:

    python3 -m venv /tmp/pyenv && /tmp/pyenv/bin/pip install supabase
    make stack && . /tmp/session-sync-stack/stack.env && /tmp/pyenv/bin/python scripts/supabase-py-check.py

It signs up and in through the client's auth, sends the `x-device-credential` header on every
request (ClientOptions.headers), registers the credential (`rpc('register_device')`), writes and
reads its device row, and checks that the same login without the header, or naming another
device, is refused (42501). Prints one line per check; exits 1 on the first failure.
"""
import os
import secrets
import sys
import uuid

from postgrest.exceptions import APIError
from supabase import ClientOptions, create_client

URL = os.environ["SYNC_STACK_URL"]
ANON = os.environ["SYNC_STACK_ANON_KEY"]
PASSWORD = "correct horse battery staple"


def check(name, condition):
    print(("ok   " if condition else "FAIL ") + name)
    if not condition:
        sys.exit(1)


def refused(call):
    try:
        call()
    except APIError as error:
        return error.code == "42501"
    return False


def signed_in(email, headers=None):
    client = create_client(URL, ANON, options=ClientOptions(headers=headers or {}))
    client.auth.sign_in_with_password({"email": email, "password": PASSWORD})
    return client


email = f"py-{uuid.uuid4().hex[:12]}@example.com"
create_client(URL, ANON).auth.sign_up({"email": email, "password": PASSWORD})
credential = secrets.token_hex(32)
client = signed_in(email, {"x-device-credential": credential})
user = client.auth.get_user().user.id
device = str(uuid.uuid4())

registered = client.rpc("register_device", {"device_id": device}).execute().data
check("register_device with the header registers the credential", registered.get("registered") is True)
again = client.rpc("register_device", {"device_id": device}).execute().data
check("the same credential again is a no-op", again.get("registered") is False)
client.table("devices").insert(
    {"id": device, "user_id": user, "name": "python", "device_type": "linux-desktop"}).execute()
rows = client.table("devices").select("id").execute().data
check("the device reads its own row", [row["id"] for row in rows] == [device])
other = str(uuid.uuid4())
check("a row in another device's name is refused", refused(lambda: client.table("devices").insert(
    {"id": other, "user_id": user, "name": "other", "device_type": "ios-phone"}).execute()))

bare = signed_in(email)
check("the same login without the header reads no device row", bare.table("devices").select("id").execute().data == [])
check("the same login without the header writes nothing", refused(lambda: bare.table("devices").update(
    {"name": "renamed"}).eq("id", device).execute()) or bare.table("devices").update(
    {"name": "renamed"}).eq("id", device).execute().data == [])
taken = signed_in(email, {"x-device-credential": secrets.token_hex(32)})
check("another credential for the registered id is refused", refused(
    lambda: taken.rpc("register_device", {"device_id": device}).execute()))
print("supabase-py: every check passed")
