"""The layer rules of the code base, checked on its imports (``ast``, nothing is run).

1. Package rules: ``codec/`` has no I/O frameworks and knows no other package; ``store/`` is a
   plain library under ``codec/``; ``spark/`` never imports the
   servers' code (its network mode talks to them only over plain sockets with ``codec/``).
2. Module layers, from the bottom: ``codec`` < ``store`` < ``spark`` < the transport,
   ``gateway/transport/`` (servers, connections, dispatch, outbound calls) < ``namesrv`` <
   ``broker`` < the rest of ``gateway/`` (launcher, CLI, test fixtures: whatever is not in
   ``transport/``). No import runs from a lower layer to a higher one, and no modules import each
   other in a circle, ``TYPE_CHECKING`` imports included. ``broker/`` and ``namesrv/`` import
   nothing from ``gateway/`` but the transport (a rule of its own, so that its message names the
   floor a misplaced module is on).
3. Trio in ``broker/`` and ``namesrv/``: only the modules in :data:`MAY_WAIT` import Trio, or a
   module that (itself or through others) does. Everything else there is plain state and plain
   functions, testable without an event loop.
4. Floors inside ``broker/`` (:data:`BROKER_FLOORS`), from the bottom: the broker's state (the
   controller, managers, POP and timer internals, ...), the typed services (``broker/service/``),
   the two front doors (the remoting processors and the gRPC activities), the wiring
   (``broker/app.py``). No import runs up a floor: the state knows no service, a service knows
   neither door, and only the wiring knows the doors it registers.
5. The two protocols apart: no module that imports the gRPC message classes
   (``gateway.transport.grpc.proto``) imports ``codec.command`` or names ``RemotingCommand``, and
   nothing in ``broker/service/`` imports ``codec.command`` or the transport.

The checks are functions of a source root, so :func:`test_the_rules_catch_forbidden_imports`
can show each of them failing on a small tree with a forbidden import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("codec", "store", "spark", "gateway", "namesrv", "broker")

FORBIDDEN = {
    "codec": {"trio", "socket", "asyncio", "store", "gateway", "broker", "namesrv", "spark"},
    "store": {"trio", "socket", "asyncio", "gateway", "broker", "namesrv", "spark"},
    "spark": {"trio", "gateway", "broker", "namesrv"},
}

#: The one subpackage of gateway/ below namesrv/ and broker/; the rest of gateway/ composes the
#: program or tests it, above them.
TRANSPORT = "gateway.transport"
LAYERS = ("codec", "store", "spark", "transport", "namesrv", "broker", "gateway-top")

#: The modules of broker/ and namesrv/ allowed to wait: they import Trio for timers, events,
#: threads or sockets. Everything else in those packages must not reach Trio at all.
MAY_WAIT = frozenset(
    {
        "broker.app",  # the broker's Trio wiring: server, timers, housekeeping
        "broker.message_service",  # SYNC_FLUSH group commit waits for fsyncs in a worker thread
        "broker.registration",  # the connections to the NameServers
        "broker.processors.pull",  # long polling: a held pull waits for an arrival or its timeout
        "broker.pop.long_polling",  # a POP that found nothing waits for an arrival or its poll time
        "broker.processors.pop",  # the POP handlers that wait (long polling, record puts)
        "broker.service.consume",  # a pop that found nothing long-polls
        "broker.service.rewind",  # wakes the long-polling POPs of the queues it rewinds (consume service)
        "broker.service.services",  # holds the consume service
        "broker.pop.service",  # the revive loop
        "broker.pop.notification",  # NOTIFICATION waits like a POP for an arrival or its poll time
        "broker.grpc.consumer",  # ReceiveMessage long-polls through the POP processor
        "broker.grpc.lite",  # a lite consumer's ReceiveMessage long-polls over its lite queues
        "broker.service.lite_pop",  # a lite pop that found nothing long-polls over the lite queues
        "broker.processors.pop_lite",  # POP_LITE_MESSAGE long-polls (the lite pop)
        "broker.processors.lite_admin",  # TRIGGER_LITE_DISPATCH wakes a group's long-polling receives
        "broker.processors.lite_subscription",  # a subscription change wakes the client's receive
        "broker.grpc.renewer",  # the loop renewing push consumers' receipt handles
        "broker.grpc.service",  # the gRPC method table, which holds ReceiveMessage
        "broker.ha.service",  # the master's HA port: slave connections, SYNC_MASTER waits for acks
        "broker.ha.client",  # the slave's connection to its master's HA port
        "broker.ha.slave_sync",  # the slave's periodic copy of its master's metadata
        "broker.ha.replication",  # runs the HA services of a broker's role
        "namesrv.app",  # the NameServer's Trio wiring
    }
)


#: Floors of broker/, from the bottom; a module is on the first floor whose test it passes, the
#: state floor when none does.
BROKER_FLOORS = ("state", "service", "door", "wiring")
_DOOR_MODULES = frozenset({"broker.pop.notification", "broker.pop.assignment"})
PROTO = "gateway.transport.grpc.proto"


def broker_floor(module: str) -> int:
    if module == "broker.app":
        return BROKER_FLOORS.index("wiring")
    if module.startswith(("broker.processors.", "broker.grpc.")) or module in _DOOR_MODULES:
        return BROKER_FLOORS.index("door")
    if module.startswith("broker.service.") or module == "broker.service":
        return BROKER_FLOORS.index("service")
    return BROKER_FLOORS.index("state")


def module_files(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """Every module below ``root``'s packages by dotted name (``pkg/__init__.py`` is ``pkg``)."""
    out: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> tuple[set[str], set[str]]:
    """The project modules ``name`` imports (anywhere in the file, ``TYPE_CHECKING`` blocks and
    function bodies too) and the top-level names of everything it imports."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    roots: set[str] = set()

    def add(dotted: str) -> None:
        roots.add(dotted.split(".")[0])
        while dotted and dotted not in modules:  # `import a.b.c` reaches the modules a.b.c is in
            dotted = dotted.rpartition(".")[0]
        if dotted and dotted != name:
            targets.add(dotted)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                add(full if full in modules else base)
    return targets, roots


def import_graph(root: Path) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    modules = module_files(root)
    edges: dict[str, set[str]] = {}
    roots: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges[name], roots[name] = imports_of(name, path, modules)
    return edges, roots


def in_transport(module: str) -> bool:
    return module == TRANSPORT or module.startswith(TRANSPORT + ".")


def layer_of(module: str) -> int:
    if in_transport(module):
        return LAYERS.index("transport")
    if module.split(".")[0] == "gateway":
        return LAYERS.index("gateway-top")
    return LAYERS.index(module.split(".")[0])


def gateway_imports_beyond_transport(root: Path) -> list[str]:
    """Imports from ``broker/`` or ``namesrv/`` of a ``gateway`` module outside the transport."""
    edges, _roots = import_graph(root)
    return sorted(
        f"{a} -> {b}"
        for a, targets in edges.items()
        if a.split(".")[0] in ("broker", "namesrv")
        for b in targets
        if b.split(".")[0] == "gateway" and not in_transport(b)
    )


def package_violations(root: Path) -> dict[str, list[str]]:
    _edges, roots = import_graph(root)
    return {
        name: sorted(found & FORBIDDEN[name.split(".")[0]])
        for name, found in roots.items()
        if name.split(".")[0] in FORBIDDEN and found & FORBIDDEN[name.split(".")[0]]
    }


def upward_imports(root: Path) -> list[str]:
    edges, _roots = import_graph(root)
    return sorted(f"{a} -> {b}" for a, targets in edges.items() for b in targets if layer_of(b) > layer_of(a))


def import_cycles(root: Path) -> list[list[str]]:
    """Every strongly connected group of two or more modules (Tarjan), sorted."""
    edges, _roots = import_graph(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(cycles)


def trio_users(root: Path) -> set[str]:
    """Modules that import Trio themselves or through any chain of project imports."""
    edges, roots = import_graph(root)
    users = {name for name, found in roots.items() if "trio" in found}
    changed = True
    while changed:
        changed = False
        for name, targets in edges.items():
            if name not in users and targets & users:
                users.add(name)
                changed = True
    return users


def waiting_outside_the_list(root: Path, may_wait: frozenset[str] = MAY_WAIT) -> list[str]:
    return sorted(
        name
        for name in trio_users(root)
        if name.split(".")[0] in ("broker", "namesrv") and name not in may_wait
    )


def broker_upward_imports(root: Path) -> list[str]:
    """Imports inside ``broker/`` from a lower floor to a higher one (:data:`BROKER_FLOORS`)."""
    edges, _roots = import_graph(root)
    return sorted(
        f"{a} -> {b}"
        for a, targets in edges.items()
        if a.split(".")[0] == "broker"
        for b in targets
        if b.split(".")[0] == "broker" and broker_floor(b) > broker_floor(a)
    )


def _names(path: Path) -> set[str]:
    return {node.id for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Name)}


def protocols_mixed(root: Path) -> list[str]:
    """Modules that import the gRPC message classes and speak remoting commands, and service
    modules that import remoting commands or the transport."""
    modules = module_files(root)
    edges, _roots = import_graph(root)
    out = []
    for name, targets in edges.items():
        remoting = "codec.command" in targets
        grpc = any(t == PROTO or t.startswith(PROTO + ".") for t in targets)
        if grpc and (remoting or "RemotingCommand" in _names(modules[name])):
            out.append(f"{name}: gRPC messages and RemotingCommand")
        if name.startswith("broker.service"):
            if remoting:
                out.append(f"{name}: a service importing codec.command")
            if any(in_transport(t) for t in targets):
                out.append(f"{name}: a service importing the transport")
    return sorted(out)


# -- the rules on this repository ------------------------------------------------------------------


def test_packages_import_only_what_their_layer_allows() -> None:
    assert package_violations(ROOT) == {}


def test_no_import_runs_up_a_layer() -> None:
    assert upward_imports(ROOT) == []


def test_broker_and_namesrv_take_only_the_transport_from_gateway() -> None:
    assert gateway_imports_beyond_transport(ROOT) == []


def test_no_import_cycles() -> None:
    assert import_cycles(ROOT) == []


def test_no_import_runs_up_a_broker_floor() -> None:
    assert broker_upward_imports(ROOT) == []


def test_grpc_and_remoting_stay_apart() -> None:
    assert protocols_mixed(ROOT) == []


def test_only_listed_broker_and_namesrv_modules_reach_trio() -> None:
    assert waiting_outside_the_list(ROOT) == []
    assert trio_users(ROOT) >= MAY_WAIT, "a module on the list no longer waits: take it off"


# -- the rules themselves ----------------------------------------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> Path:
    for package in PACKAGES:
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_rules_pass_a_clean_tree(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "codec/frame.py": "import struct\n",
            "store/log.py": "from codec import frame\n",
            "gateway/transport/server.py": "import trio\nfrom codec.frame import x\n",
            "broker/state.py": "from store.log import y\n",
            "broker/app.py": (
                "import trio\nfrom broker.state import z\nfrom gateway.transport.server import s\n"
            ),
            "gateway/launcher.py": "from broker.app import a\n",
        },
    )
    assert package_violations(root) == {}
    assert upward_imports(root) == []
    assert gateway_imports_beyond_transport(root) == []
    assert import_cycles(root) == []
    assert waiting_outside_the_list(root, frozenset({"broker.app"})) == []
    assert broker_upward_imports(root) == []
    assert protocols_mixed(root) == []


@pytest.mark.parametrize(
    ("files", "rule", "found"),
    [
        ({"store/log.py": "import trio\n"}, "package", {"store.log": ["trio"]}),
        ({"codec/frame.py": "from broker import app\n"}, "package", {"codec.frame": ["broker"]}),
        (
            {"spark/read.py": "from gateway.transport.server import s\n"},
            "package",
            {"spark.read": ["gateway"]},
        ),
        (
            {"broker/state.py": "from gateway.launcher import g\n", "gateway/launcher.py": ""},
            "upward",
            ["broker.state -> gateway.launcher"],
        ),
        (
            {"namesrv/routes.py": "import broker.state\n", "broker/state.py": ""},
            "upward",
            ["namesrv.routes -> broker.state"],
        ),
        (
            {
                "broker/a.py": "from broker import b\n",
                "broker/b.py": "if TYPE_CHECKING:\n    from broker.a import A\n",
            },
            "cycle",
            [["broker.a", "broker.b"]],
        ),
        (
            {"broker/state.py": "from gateway.helpers import h\n", "gateway/helpers.py": ""},
            "transport",
            ["broker.state -> gateway.helpers"],
        ),
        (
            {"gateway/transport/server.py": "from gateway.cli import main\n", "gateway/cli.py": ""},
            "upward",
            ["gateway.transport.server -> gateway.cli"],
        ),
        ({"broker/state.py": "import trio\n"}, "trio", ["broker.state"]),
        (
            {
                "broker/service/send.py": "from broker.processors import send\n",
                "broker/processors/send.py": "",
            },
            "floor",
            ["broker.service.send -> broker.processors.send"],
        ),
        (
            {"broker/controller.py": "from broker.service.send import s\n", "broker/service/send.py": ""},
            "floor",
            ["broker.controller -> broker.service.send"],
        ),
        (
            {
                "broker/grpc/send.py": (
                    "from gateway.transport.grpc.proto import rocketmq_v2_pb2\nx = RemotingCommand\n"
                ),
                "gateway/transport/grpc/proto/__init__.py": "",
            },
            "protocols",
            ["broker.grpc.send: gRPC messages and RemotingCommand"],
        ),
        (
            {"broker/service/send.py": "from codec.command import RemotingCommand\n", "codec/command.py": ""},
            "protocols",
            ["broker.service.send: a service importing codec.command"],
        ),
        (
            {
                "broker/app.py": "import trio\n",
                "broker/processors/send.py": "from broker.app import BrokerApp\n",
            },
            "trio",
            ["broker.processors.send"],
        ),
    ],
)
def test_the_rules_catch_forbidden_imports(
    tmp_path: Path, files: dict[str, str], rule: str, found: object
) -> None:
    root = _tree(tmp_path, files)
    checks = {
        "package": lambda: package_violations(root),
        "upward": lambda: upward_imports(root),
        "transport": lambda: gateway_imports_beyond_transport(root),
        "cycle": lambda: import_cycles(root),
        "trio": lambda: waiting_outside_the_list(root, frozenset({"broker.app"})),
        "floor": lambda: broker_upward_imports(root),
        "protocols": lambda: protocols_mixed(root),
    }
    assert checks[rule]() == found
