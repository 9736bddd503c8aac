"""
Drives the official Python client (kurrentdbclient, from PyPI, unchanged) against one EventDB
node and prints what the client saw as one JSON document: the TypeScript test
(test/integration/grpc-client-python.test.ts) asserts on it. Every check records observations
(event types, positions, the client's exception class names), never a verdict of its own.

    python kurrentdb_client_checks.py <connection string> <prefix> <reader-user> <reader-password> [acl]

`acl` adds the credentials and ACL checks: with TLS only, because the client sends credentials
only over TLS (and an insecure node, like the original's, authorises every call).
"""
import json
import sys
import threading
import time
import traceback
from uuid import uuid4

from kurrentdbclient import CaughtUp, Checkpoint, KurrentDBClient, NewEvent, StreamState

URI, PREFIX, READER, READER_PASSWORD = sys.argv[1:5]
WITH_ACL = sys.argv[5:6] == ["acl"]
TIMEOUT_S = 20.0
results = {}


def check(name):
    def register(fn):
        try:
            results[name] = fn()
        except Exception as error:  # recorded for the test to show, never swallowed silently
            results[name] = {"unexpected": type(error).__name__, "message": str(error), "trace": traceback.format_exc()}
        return fn
    return register


def event(type_, payload=None):
    return NewEvent(type=type_, data=json.dumps(payload if payload is not None else {"type": type_}).encode())


def error_name(action):
    try:
        action()
    except Exception as error:
        return type(error).__name__
    return None


client = KurrentDBClient(uri=URI)


@check("append_and_read")
def _():
    stream = f"{PREFIX}orders"
    # append_to_stream answers the commit position of the last event it appended
    first = client.append_to_stream(stream, events=event("OrderPlaced", {"id": 1}), current_version=StreamState.NO_STREAM)
    batch = client.append_to_stream(stream, events=[event(f"Line{i}", {"i": i}) for i in range(100)], current_version=0)
    forwards = client.get_stream(stream)
    backwards = client.get_stream(stream, backwards=True, limit=3)
    middle = client.get_stream(stream, stream_position=50, limit=2)
    return {
        "commitPositions": [first == forwards[0].commit_position, batch == forwards[-1].commit_position, batch > first],
        "currentVersion": client.get_current_version(stream),
        "forwardCount": len(forwards),
        "firstEvent": {"type": forwards[0].type, "data": json.loads(forwards[0].data), "position": forwards[0].stream_position, "stream": forwards[0].stream_name},
        "backwardPositions": [e.stream_position for e in backwards],
        "middleTypes": [e.type for e in middle],
        "commitPositionsIncrease": all(a.commit_position < b.commit_position for a, b in zip(forwards, forwards[1:])),
    }


@check("expected_versions")
def _():
    stream = f"{PREFIX}ev"
    missing = f"{PREFIX}ev-missing"
    out = {}
    out["exists_on_missing"] = error_name(lambda: client.append_to_stream(missing, events=event("A"), current_version=StreamState.EXISTS))
    out["exact_on_missing"] = error_name(lambda: client.append_to_stream(missing, events=event("A"), current_version=0))
    out["no_stream_first"] = error_name(lambda: client.append_to_stream(stream, events=event("A"), current_version=StreamState.NO_STREAM))
    out["no_stream_again"] = error_name(lambda: client.append_to_stream(stream, events=event("B"), current_version=StreamState.NO_STREAM))
    out["exists"] = error_name(lambda: client.append_to_stream(stream, events=event("B"), current_version=StreamState.EXISTS))
    out["any"] = error_name(lambda: client.append_to_stream(stream, events=event("C"), current_version=StreamState.ANY))
    out["exact_right"] = error_name(lambda: client.append_to_stream(stream, events=event("D"), current_version=2))
    out["exact_wrong"] = error_name(lambda: client.append_to_stream(stream, events=event("E"), current_version=1))
    out["batch_exact_wrong"] = error_name(lambda: client.append_to_stream(stream, events=[event("E"), event("F")], current_version=7))
    out["current_version"] = client.get_current_version(stream)
    out["missing_current_version"] = str(client.get_current_version(missing))
    out["types"] = [e.type for e in client.get_stream(stream)]
    out["missing_read"] = error_name(lambda: client.get_stream(missing))
    return out


@check("read_all")
def _():
    types = {f"{PREFIX}AllA", f"{PREFIX}AllB"}
    client.append_to_stream(f"{PREFIX}all-1", events=[event(f"{PREFIX}AllA"), event(f"{PREFIX}AllB")], current_version=StreamState.ANY)
    forwards = [e for e in client.read_all() if e.type in types]
    backwards = [e for e in client.read_all(backwards=True, limit=50) if e.type in types]
    by_type = list(client.read_all(filter_include=[f"{PREFIX}AllB"], filter_exclude=[]))
    by_stream = list(client.read_all(filter_include=[f"{PREFIX}all-"], filter_by_stream_name=True, filter_by_prefix=True, filter_exclude=[]))
    system = [e.type for e in client.read_all() if e.type.startswith("$")]
    return {
        "forwards": [e.type for e in forwards],
        "backwards": [e.type for e in backwards],
        "byType": [e.type for e in by_type],
        "byStreamPrefix": sorted({e.stream_name for e in by_stream}),
        "systemEventsInDefaultRead": system,
    }


@check("subscribe_to_all_filtered")
def _():
    stream = f"{PREFIX}sub-all"
    client.append_to_stream(stream, events=[event(f"{PREFIX}Early")], current_version=StreamState.ANY)
    seen = []
    checkpoints = 0
    caught_up = False
    subscription = client.subscribe_to_all(
        filter_include=[f"{PREFIX}sub-all"], filter_by_stream_name=True, filter_by_prefix=True, filter_exclude=[],
        include_checkpoints=True, include_caught_up=True, timeout=TIMEOUT_S,
    )
    appended_live = False
    deadline = time.monotonic() + TIMEOUT_S
    for item in subscription:
        if isinstance(item, CaughtUp):
            caught_up = True
            if not appended_live:
                appended_live = True
                client.append_to_stream(stream, events=[event(f"{PREFIX}Live")], current_version=StreamState.ANY)
                # unrelated events, so that the filter has something to skip and checkpoints to send
                for n in range(40):
                    client.append_to_stream(f"{PREFIX}noise-{n}", events=[event("Noise")], current_version=StreamState.ANY)
            continue
        if isinstance(item, Checkpoint):
            checkpoints += 1
        else:
            seen.append(item.type)
        if f"{PREFIX}Live" in seen and checkpoints > 0:
            break
        if time.monotonic() > deadline:
            break
    subscription.stop()
    return {"types": seen, "caughtUp": caught_up, "checkpoints": checkpoints}


@check("subscribe_to_stream")
def _():
    stream = f"{PREFIX}sub-stream"
    client.append_to_stream(stream, events=[event("Before1"), event("Before2")], current_version=StreamState.NO_STREAM)
    seen = []
    caught_up_after = None
    subscription = client.subscribe_to_stream(stream, include_caught_up=True, timeout=TIMEOUT_S)

    def append_later():
        time.sleep(0.5)
        client.append_to_stream(stream, events=[event("After")], current_version=1)

    writer = threading.Thread(target=append_later)
    started = False
    for item in subscription:
        if isinstance(item, CaughtUp):
            caught_up_after = list(seen)
            if not started:
                started = True
                writer.start()
            continue
        seen.append(item.type)
        if "After" in seen:
            break
    subscription.stop()
    if started:
        writer.join()
    return {"types": seen, "caughtUpAfter": caught_up_after}


@check("delete_and_tombstone")
def _():
    deleted = f"{PREFIX}to-delete"
    client.append_to_stream(deleted, events=[event("A"), event("B")], current_version=StreamState.NO_STREAM)
    client.delete_stream(deleted, current_version=1)
    after_delete = error_name(lambda: client.get_stream(deleted))
    client.append_to_stream(deleted, events=event("C"), current_version=StreamState.ANY)
    recreated = [e.stream_position for e in client.get_stream(deleted)]
    after_recreate = [e.type for e in client.get_stream(deleted)]
    tombstoned = f"{PREFIX}to-tombstone"
    client.append_to_stream(tombstoned, events=event("A"), current_version=StreamState.NO_STREAM)
    client.tombstone_stream(tombstoned, current_version=StreamState.ANY)
    return {
        "afterDelete": after_delete,
        "recreatedAt": recreated,
        "afterRecreate": after_recreate,
        "appendAfterTombstone": error_name(lambda: client.append_to_stream(tombstoned, events=event("B"), current_version=StreamState.ANY)),
        "batchAppendAfterTombstone": error_name(lambda: client.append_to_stream(tombstoned, events=[event("B"), event("C")], current_version=StreamState.ANY)),
        "readAfterTombstone": error_name(lambda: client.get_stream(tombstoned)),
    }


@check("metadata")
def _():
    stream = f"{PREFIX}meta"
    client.append_to_stream(stream, events=[event(f"E{i}") for i in range(5)], current_version=StreamState.NO_STREAM)
    before = client.get_stream_metadata(stream)
    client.set_stream_metadata(stream, metadata={"$maxCount": 2, "custom": "kept"})
    after, version = client.get_stream_metadata(stream)
    return {"before": [before[0], str(before[1])], "after": after, "version": version, "visible": [e.type for e in client.get_stream(stream)]}


def credentials_and_acl():
    secret = f"{PREFIX}secret"
    client.append_to_stream(secret, events=event("Private"), current_version=StreamState.NO_STREAM)
    client.set_stream_metadata(secret, metadata={"$acl": {"$r": "$admins", "$w": "$admins"}})
    host = URI.split("@", 1)[1] if "@" in URI else URI.split("://", 1)[1]
    wrong = KurrentDBClient(uri=f"kurrentdb://admin:wrong-password@{host}")
    reader = KurrentDBClient(uri=f"kurrentdb://{READER}:{READER_PASSWORD}@{host}")
    try:
        return {
            "wrongPasswordRead": error_name(lambda: wrong.get_stream(secret)),
            "wrongPasswordAppend": error_name(lambda: wrong.append_to_stream(f"{PREFIX}w", events=event("A"), current_version=StreamState.ANY)),
            "readerReadDenied": error_name(lambda: reader.get_stream(secret)),
            "readerAppendDenied": error_name(lambda: reader.append_to_stream(secret, events=event("A"), current_version=StreamState.ANY)),
            "readerAllHasSecret": any(e.stream_name == secret for e in reader.read_all(filter_exclude=[])),
            "readerPublicRead": [e.type for e in reader.get_stream(f"{PREFIX}orders", limit=1)],
            "perCallCredentials": [e.type for e in wrong.get_stream(secret, credentials=wrong.construct_call_credentials("admin", "changeit"))],
        }
    finally:
        wrong.close()
        reader.close()


if WITH_ACL:
    check("credentials_and_acl")(credentials_and_acl)
client.close()
print(json.dumps(results))
