"""Which code the torch-compute check analyses: every unit of the file, minus principled exemptions.

A *unit* is the module's own statements, a class body, a function/method body or a lambda body. Decorators,
default arguments, bases and annotations belong to the unit that evaluates them (the enclosing one). Every unit
is analysed as forward code except:
  - ``@triton.jit`` bodies (Triton code; their decorators and defaults are still analysed);
  - the exact ``if __name__ == "__main__":`` block (the harness imports the candidate as "candidate"; assigning
    ``__name__`` anywhere is tampering), and everything inside it;
  - ``ModelNew.__init__`` and its in-file bases' ``__init__`` (the harness re-randomizes parameters after
    construction, so precomputation there cannot carry an answer), but only while nothing else can run them: a
    reference to ``__init__`` outside an ``__init__`` (``self.__init__(x)`` in ``forward``), or a construction
    of the model outside the main block (``ModelNew(...)``, ``type(self)(...)``, ``self.__class__(...)``), makes
    them forward code like the rest (the harness's own construction is the only exempt one);
  - ``__init__`` of a class, and any function or method, whose every reference is a direct call from an exempt
    unit (or sits in the main block); a class used as a base inherits its subclass's exemption;
  - an echoed ``class Model`` (an inert one: ``inert_class``) and echoed ``get_inputs`` / ``get_init_inputs``
    referenced nowhere but the main block.
A reference that escapes into a value (container, attribute, default, decorator, argument, return) is not a
direct call, so its target is analysed; a function never referenced at all is analysed too.

``escaping`` holds the function-likes whose parameters cannot be inferred from call sites (lambdas, decorated
functions, implicitly invoked methods, anything passed around): their parameters are tensors (kinds.py). A
``triton.constexpr_function`` is called by Triton with constexpr values only: its parameters are never tensors. A lambda
bound to a name (``cdiv = lambda a, b: (a + b - 1) // b``) and only called by that name is a function like a def.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
UNIT_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
ECHOED_HELPERS = ("get_inputs", "get_init_inputs")


def inert_class(cls: ast.ClassDef) -> bool:
    """Whether defining ``cls`` runs nothing of its own: no decorator or keyword (a metaclass), and a body of
    a docstring and plain method definitions whose defaults and annotations are constants or names. Only such a
    ``class Model`` is an echo of the reference: a class body runs at import, and the twenty-eighth red team hid
    numpy reading the input's memory in one (a function defined there and parked in a dict the forward called)."""
    if cls.decorator_list or cls.keywords:
        return False
    simple = (ast.Constant, ast.Name, ast.Attribute)
    for i, stmt in enumerate(cls.body):
        if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if not isinstance(stmt, FUNCS) or stmt.decorator_list:
            return False
        args = stmt.args
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        evaluated = [*args.defaults, *(d for d in args.kw_defaults if d is not None), stmt.returns,
                     *(a.annotation for a in every if a is not None)]
        if not all(e is None or isinstance(e, simple) for e in evaluated):
            return False
    return True


@dataclass(eq=False)
class Unit:
    """One analysed scope: its node, enclosing unit, owning class (for methods) and own nodes in walk order."""

    node: ast.AST
    parent: Unit | None
    cls: ast.ClassDef | None = None
    nodes: list[ast.AST] = field(default_factory=list)

    @property
    def name(self) -> str:
        if isinstance(self.node, ast.Module):
            return "module level"
        if isinstance(self.node, ast.Lambda):
            return f"a lambda (line {self.node.lineno})"
        if isinstance(self.node, ast.ClassDef):
            return f"class {self.node.name} body"
        return f"{self.cls.name}.{self.node.name}" if self.cls is not None else self.node.name


def is_main_guard(node: ast.AST) -> bool:
    """Exactly ``if __name__ == "__main__":`` (no other spelling counts)."""
    t = getattr(node, "test", None)
    return (
        isinstance(node, ast.If)
        and isinstance(t, ast.Compare)
        and isinstance(t.left, ast.Name)
        and t.left.id == "__name__"
        and len(t.ops) == 1
        and isinstance(t.ops[0], ast.Eq)
        and isinstance(t.comparators[0], ast.Constant)
        and t.comparators[0].value == "__main__"
    )


def main_block_ids(tree: ast.Module) -> set[int]:
    """id() of every node inside a module-level main block's body (its ``else`` runs, so it is not exempt)."""
    return {id(n) for s in tree.body if is_main_guard(s) for b in s.body for n in ast.walk(b)}


class Coverage:
    """Units of a module, their exemptions and escaping function-likes (see the module docstring)."""

    def __init__(
        self, tree: ast.Module, nodes, kernel_nodes: set[int], modelnew: ast.ClassDef | None, classes
    ):
        self.tree, self.kernel_nodes, self.classes = tree, kernel_nodes, classes
        self.in_main = main_block_ids(tree)
        self.units: list[Unit] = []
        self.unit_of: dict[int, Unit] = {}  # id(node) -> the unit that evaluates it
        self.by_node: dict[int, Unit] = {}  # id(unit node) -> Unit
        self.all_nodes = nodes
        self.parents: dict[int, ast.AST] = {id(c): n for n in nodes for c in ast.iter_child_nodes(n)}
        self._build(tree, None, None)
        self.refs = self._references()
        self.exempt: set[int] = set()  # id(unit node)
        self._seed(modelnew)
        self._fixpoint()
        self.escaping = {i for i in self.by_node if self._escapes(self.by_node[i])}

    # ------------------------------------------------------------------ units
    def _build(self, root: ast.AST, parent: Unit | None, cls: ast.ClassDef | None) -> None:
        unit = Unit(root, parent, cls)
        self.units.append(unit)
        self.by_node[id(root)] = unit
        body_cls = root if isinstance(root, ast.ClassDef) else None
        if isinstance(root, ast.Lambda):
            stack = [root.body]
        elif isinstance(root, (ast.Module, ast.ClassDef, *FUNCS)):
            stack = list(reversed(root.body))
        while stack:
            node = stack.pop()
            if id(node) in self.in_main:
                continue
            unit.nodes.append(node)
            self.unit_of[id(node)] = unit
            stack.extend(reversed(self._outer_children(node)))
            if isinstance(node, UNIT_TYPES) and id(node) not in self.kernel_nodes:
                self._build(node, unit, body_cls)

    @staticmethod
    def _outer_children(node: ast.AST) -> list[ast.AST]:
        """Children evaluated by the enclosing unit: a def's decorators, defaults, annotations; a class's bases."""
        if isinstance(node, (*FUNCS, ast.Lambda)):
            a = node.args
            outer = [*getattr(node, "decorator_list", []), *a.defaults, *[d for d in a.kw_defaults if d]]
            args = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
            outer += [p.annotation for p in args if p is not None and p.annotation is not None]
            return outer + ([node.returns] if getattr(node, "returns", None) else [])
        if isinstance(node, ast.ClassDef):
            return [*node.decorator_list, *node.bases, *node.keywords]
        return list(ast.iter_child_nodes(node))

    # ------------------------------------------------------------------ references
    def _references(self) -> dict[int, list[ast.AST]]:
        """id(def / class node) -> Name/Attribute nodes that may refer to it (by name; over-approximate)."""
        by_name: dict[str, list[ast.AST]] = {}
        methods: dict[str, list[ast.AST]] = {}
        classes: dict[str, list[ast.AST]] = {}
        for u in self.units:
            node = u.node
            if isinstance(node, FUNCS) and isinstance(u.parent.node, ast.ClassDef):
                methods.setdefault(node.name, []).append(node)
            elif isinstance(node, FUNCS):
                by_name.setdefault(node.name, []).append(node)
            elif (name := self.lambda_name(node)) is not None:  # ``cdiv = lambda a, b: ...``: a function by that name
                by_name.setdefault(name, []).append(node)
            elif isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, []).append(node)
        self.defs_by_name, self.methods_by_name = by_name, methods
        refs: dict[int, list[ast.AST]] = {}
        for node in self.all_nodes:
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
                for d in by_name.get(node.id, []) + methods.get(node.id, []) + classes.get(node.id, []):
                    refs.setdefault(id(d), []).append(node)
            elif isinstance(node, ast.Attribute):
                for d in methods.get(node.attr, []) + by_name.get(node.attr, []):
                    refs.setdefault(id(d), []).append(node)
        return refs

    def lambda_name(self, node: ast.AST) -> str | None:
        """The name a lambda is bound to by a plain assignment (``name = lambda ...``), if that is what it is."""
        parent = self.parents.get(id(node))
        if isinstance(node, ast.Lambda) and isinstance(parent, ast.Assign) and parent.value is node \
                and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            return parent.targets[0].id
        return None

    def _direct_call(self, ref: ast.AST) -> bool:
        parent = self.parents.get(id(ref))
        return isinstance(parent, ast.Call) and parent.func is ref

    def _neutral(self, ref: ast.AST, target: ast.AST) -> bool:
        """A reference that runs nothing: in the main block, inside the target itself, or ``super(C, self)``."""
        if id(ref) in self.in_main:
            return True
        unit = self.unit_of.get(id(ref))
        while unit is not None and isinstance(target, FUNCS):  # recursion runs nothing new
            if unit.node is target:
                return True
            unit = unit.parent
        parent = self.parents.get(id(ref))
        return (
            isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "super"
        )

    def _exempt_ref(self, ref: ast.AST, target: ast.AST) -> bool:
        if self._neutral(ref, target):
            return True
        unit = self.unit_of.get(id(ref))
        if isinstance(self.parents.get(id(ref)), ast.ClassDef) and ref in self.parents[id(ref)].bases:
            sub = self.parents[id(ref)]
            return self._init_of(sub) is not None and id(self._init_of(sub)) in self.exempt
        return self._direct_call(ref) and unit is not None and id(unit.node) in self.exempt

    # ------------------------------------------------------------------ exemptions
    def _init_of(self, cls: ast.ClassDef) -> ast.AST | None:
        return next((i for i in cls.body if isinstance(i, FUNCS) and i.name == "__init__"), None)

    def _reconstructs(self, modelnew: ast.ClassDef | None) -> bool:
        """Whether code outside the main block can run a constructor again: ``x.__init__`` outside an
        ``__init__``, ``ModelNew`` named outside its own ``super(...)``, ``type(x)(...)``, ``x.__class__(...)``."""
        for node in self.all_nodes:
            if id(node) in self.in_main:
                continue
            unit = self.unit_of.get(id(node))
            in_init = unit is not None and isinstance(unit.node, FUNCS) and unit.node.name == "__init__"
            if isinstance(node, ast.Attribute) and node.attr == "__init__" and not in_init:
                return True
            if isinstance(node, ast.Constant) and node.value == "__init__" and not in_init:
                return True
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Call) and isinstance(node.func.func, ast.Name) \
                    and node.func.func.id == "type":
                return True
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__class__":
                return True
            if modelnew is not None and isinstance(node, ast.Name) and node.id == modelnew.name \
                    and not isinstance(node.ctx, ast.Store) and not self._in_super(node):
                return True
        return False

    def _in_super(self, node: ast.AST) -> bool:
        parent = self.parents.get(id(node))
        return isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "super"

    def _seed(self, modelnew: ast.ClassDef | None) -> None:
        chain = [modelnew] if modelnew is not None and not self._reconstructs(modelnew) else []
        while chain:
            cls = chain.pop()
            if self._init_of(cls) is not None:
                self.exempt.add(id(self._init_of(cls)))
            chain += [
                self.classes[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in self.classes
            ]
        self.echo_ids: set[int] = set()  # id(unit node) of echoed reference code nothing runs
        echoed = [self.classes["Model"]] if "Model" in self.classes and inert_class(self.classes["Model"]) else []
        echoed += [n for n in self.tree.body if isinstance(n, FUNCS) and n.name in ECHOED_HELPERS]
        for node in echoed:
            inside = {id(n) for n in ast.walk(node)}
            if all(id(r) in self.in_main or id(r) in inside for r in self.refs.get(id(node), [])):
                ids = {i for i in inside if i in self.by_node}
                self.exempt |= ids
                self.echo_ids |= ids

    def _fixpoint(self) -> None:
        changed = True
        while changed:
            changed = False
            for u in self.units:
                target = u.node
                if id(target) in self.exempt or not isinstance(target, FUNCS):
                    continue
                if u.cls is not None and target.name == "__init__":
                    owner, refs = u.parent.node, self.refs.get(id(u.parent.node), [])
                else:
                    owner, refs = target, self.refs.get(id(target), [])
                if target.decorator_list and not self._plain_method_decorators(target):
                    continue
                if refs and all(self._exempt_ref(r, owner) for r in refs):
                    self.exempt.add(id(target))
                    changed = True

    @staticmethod
    def _plain_method_decorators(fn: ast.AST) -> bool:
        return all(Coverage._plain_method_decorators_of(d) for d in fn.decorator_list)

    @staticmethod
    def _plain_method_decorators_of(d: ast.AST) -> bool:
        return isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")

    def _escapes(self, unit: Unit) -> bool:
        """Parameters not inferable from call sites: lambdas, decorated defs, implicit methods, passed-around defs."""
        node = unit.node
        if isinstance(node, ast.Lambda) and self.lambda_name(node) is None:
            return True
        if isinstance(node, ast.Lambda):  # bound to a name: as a def of that name, only called where it is named
            refs = [r for r in self.refs.get(id(node), []) if id(r) not in self.in_main]
            return not refs or not all(self._direct_call(r) for r in refs)
        if not isinstance(node, FUNCS):
            return False
        if any(_compile_time(d) for d in node.decorator_list):  # called by Triton on constexprs, never tensors
            return False
        if not all(self._plain_method_decorators_of(d) or _caching(d) for d in node.decorator_list) \
                or node.name.startswith("__") or node.name == "forward":
            return True
        refs = [r for r in self.refs.get(id(node), []) if id(r) not in self.in_main]
        return not refs or not all(self._direct_call(r) or self._neutral(r, node) for r in refs)

    def analysed(self) -> list[Unit]:
        """Units the torch-compute check reads: a lambda made in an exempt ``__init__`` is still analysed."""
        return [u for u in self.units if id(u.node) not in self.exempt]


def _compile_time(d: ast.AST) -> bool:
    """``triton.constexpr_function``: Triton calls it while it compiles a kernel (under the interpreter, as the
    kernel's body runs) with the kernel's constexpr values, never a tensor; what it returns is counted at run time
    as numbers from Python (``Monitor.constexpr_values``)."""
    target = d.func if isinstance(d, ast.Call) else d
    return (target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")) == "constexpr_function"


def _caching(d: ast.AST) -> bool:
    """``functools.cache`` / ``lru_cache`` (called or not): calls reach the function with their own arguments, so
    its parameters are inferred from its call sites as a plain def's are."""
    target = d.func if isinstance(d, ast.Call) else d
    name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
    return name in ("cache", "lru_cache")
