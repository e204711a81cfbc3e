"""What a GraphQL document would cost, measured in one pass before it is validated or run.

strawberry's depth and alias limiters walk every fragment spread once per path, so a 667-byte
document whose fragments each spread the previous one four times (`...F11 ...F11 ...F11 ...F11`)
costs 4^12 walks: 44 s of CPU on the only event loop, before the caller's token is even
reviewed. Here each fragment is measured once and its measure reused wherever it is spread
(memoized), so measuring is linear in the size of the document, whatever it expands to; the
expanded figures (fields, aliases, cost) are then compared with the limits as numbers.

The figures, per operation (the largest over the document's operations is compared):
- depth: how many fields deep the deepest field is (top-level fields are at depth 0;
  introspection's `ofType` adds no level);
- fields and aliases: how many fields (and aliased fields) the response would have if every
  fragment were expanded, regardless of the data;
- cost: fields weighted by the page sizes of the lists around them (`first`, or the number of
  `ids` of `nodes(ids:)`, or `assumed_page_size` when either is a variable), as GitHub's API
  estimates "nodes";
- comparisons: the field-pair comparisons graphql-core's OverlappingFieldsCanBeMerged rule
  would make (same response name in one selection set, fragments pairwise); that rule is
  quadratic, so it is bounded before validation runs;
- number literals longer than `max_number_length` characters (Python refuses to turn a
  > 4,300-digit string into an int, and nothing here needs more than a page size);
- units, the budget of the whole analysis, counted in work rather than time so that a query
  is accepted or refused alike on any machine at any load: one per selection (field, fragment
  spread, inline fragment) and per argument or default value the walk visits, every fragment
  definition once (what graphql-core's validation then visits once per rule), plus the field
  comparisons (what its OverlappingFieldsCanBeMerged rule iterates). Units are a sum over the
  document, not a largest operation, and the walk stops as soon as they pass the limit, so the
  walk's own work is bounded by the limit too.

No clock is read here. A wall-clock backstop (`Backstop`, set by the event loop when an
analysis runs past `max_analysis_seconds`) only protects the service from a cost the units do
not foresee; the walk and, through `ValidationBackstop`, graphql-core's validation stop when it
is set.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from graphql import (
    ASTValidationRule,
    DirectiveNode,
    DocumentNode,
    FieldNode,
    FloatValueNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    IntValueNode,
    ListValueNode,
    Node,
    ObjectValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
    ValueNode,
    VariableNode,
)


@dataclass(frozen=True)
class QueryLimits:
    # Lexical tokens graphql-core parses at most (its own limit, checked while parsing).
    max_tokens: int = 2000
    max_depth: int = 12
    max_aliases: int = 30
    max_fields: int = 2000
    max_cost: int = 50000
    max_comparisons: int = 10000
    max_number_length: int = 40
    # Work units (selections and values visited, field comparisons) analysing one document may
    # take: the deterministic budget. Well above the largest legitimate queries (docs/service.md,
    # *Limits*, lists them: hundreds), far below the bombs of tests/query_bombs.py (millions).
    max_analysis_units: int = 20000
    # Wall-clock backstop for analysing one document (parse, measure, validate), far above any
    # document within the units (tens of ms): it only protects the service from a cost the units
    # do not foresee, and a document it stops is refused without being remembered.
    max_analysis_seconds: float = 5.0
    # `first: $variable` is unknown when the document is measured: the largest page allowed.
    assumed_page_size: int = 100


class QueryRefusedError(Exception):
    """The document is over a limit; `message` says which, for the caller."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class Measure:
    """The figures of one selection set, as if every fragment in it were expanded."""

    depth: int = 0
    fields: int = 0
    aliases: int = 0
    cost: int = 0
    comparisons: int = 0
    # Response name -> fields with that name directly in this selection set (fragments
    # flattened): what OverlappingFieldsCanBeMerged compares pairwise.
    names: Counter[str] = field(default_factory=Counter)
    spreads: int = 0
    # Work units of the whole document (selections and values visited, comparisons).
    units: int = 0


class Backstop(threading.Event):
    """Set (by the event loop's timer) when an analysis has run past the wall-clock backstop."""


class AnalysisStoppedError(Exception):
    """Raised out of the walk or graphql-core's validation once the backstop is set."""


# How many nodes are visited between two looks at the backstop.
_CHECK_EVERY = 256


def units_refusal(units: int, limits: QueryLimits) -> QueryRefusedError:
    """`units`: those counted when the walk stopped, at least that many."""
    return QueryRefusedError(
        f"the query is too expensive to analyse: it needs at least {units} units, over the "
        f"limit of {limits.max_analysis_units} (a unit per field, fragment spread and argument "
        "value, each fragment counted once, and per pair of same-named fields to compare); "
        "select fewer fields, put repeated selections in a fragment, or split the query"
    )


class _Walk:
    def __init__(
        self, document: DocumentNode, limits: QueryLimits, backstop: Backstop | None
    ) -> None:
        self.limits = limits
        self.backstop = backstop
        self.visited = 0
        # Comparisons of the operations measured so far (their units beside `visited`).
        self.compared = 0
        self.fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        self.memo: dict[str, Measure] = {}
        # Fragments being measured: a cycle (a validation error) counts as empty here.
        self.in_progress: set[str] = set()

    def tick(self) -> None:
        self.visited += 1
        if self.visited + self.compared > self.limits.max_analysis_units:
            raise units_refusal(self.visited + self.compared, self.limits)
        if (
            self.backstop is not None
            and self.visited % _CHECK_EVERY == 0
            and self.backstop.is_set()
        ):
            raise AnalysisStoppedError

    def fragment(self, name: str) -> Measure:
        cached = self.memo.get(name)
        if cached is not None:
            return cached
        definition = self.fragments.get(name)
        if definition is None or name in self.in_progress:
            return Measure()  # unknown or cyclic: validation reports it
        self.in_progress.add(name)
        try:
            measure = self.selection_set(definition.selection_set, level=0)
        finally:
            self.in_progress.discard(name)
        self.memo[name] = measure
        return measure

    def selection_set(self, selection_set: SelectionSetNode, level: int) -> Measure:
        """`level`: how deep this set's fields are, relative to the fragment or operation."""
        total = Measure()
        for selection in selection_set.selections:
            self.tick()
            self.directives(selection.directives)
            if isinstance(selection, FieldNode):
                self.field(selection, level, total)
            elif isinstance(selection, FragmentSpreadNode):
                self.add(total, self.fragment(selection.name.value), level)
                total.spreads += 1
            elif isinstance(selection, InlineFragmentNode):
                self.add(total, self.selection_set(selection.selection_set, 0), level)
        total.comparisons += sum(n * (n - 1) // 2 for n in total.names.values())
        total.comparisons += total.spreads * (total.spreads - 1) // 2
        self.check(total, level)
        return total

    def field(self, node: FieldNode, level: int, total: Measure) -> None:
        page = 1
        for argument in node.arguments or ():
            self.value(argument.value)
            if argument.name.value == "first":
                if isinstance(argument.value, IntValueNode):
                    page = max(1, min(int(argument.value.value), self.limits.assumed_page_size))
                elif isinstance(argument.value, VariableNode):
                    page = self.limits.assumed_page_size
            elif argument.name.value == "ids":  # `nodes(ids:)`: one object per id
                if isinstance(argument.value, ListValueNode):
                    page = max(1, min(len(argument.value.values), self.limits.assumed_page_size))
                elif isinstance(argument.value, VariableNode):
                    page = self.limits.assumed_page_size
        total.fields += 1
        total.cost += 1
        total.depth = max(total.depth, level)
        total.names[(node.alias or node.name).value] += 1
        if node.alias is not None:
            total.aliases += 1
        if node.selection_set is not None:
            # Introspection's `__Type.ofType` (one type, never a list; no other type of the schema
            # has the name) unwraps List/NonNull: a chain of them adds no level. The standard
            # introspection query (graphql-js', GraphiQL's) nests it seven deep, for depth 14.
            below = level if node.name.value == "ofType" else level + 1
            if below > self.limits.max_depth:
                raise QueryRefusedError(
                    f"the query exceeds maximum operation depth of {self.limits.max_depth}"
                )
            children = self.selection_set(node.selection_set, below)
            total.depth = max(total.depth, children.depth)
            total.fields += children.fields
            total.aliases += children.aliases
            total.cost += page * children.cost
            total.comparisons += children.comparisons

    @staticmethod
    def add(total: Measure, part: Measure, level: int) -> None:
        """Adds a fragment's measure (taken at level 0) to a selection set at `level`."""
        total.depth = max(total.depth, part.depth + level)
        total.fields += part.fields
        total.aliases += part.aliases
        total.cost += part.cost
        total.comparisons += part.comparisons
        # graphql-core compares a fragment's fields with the set's by name (so its names
        # count here) and fragment pairs once each (so only this set's own spreads count).
        total.names.update(part.names)

    def check(self, measure: Measure, level: int) -> None:
        limits = self.limits
        if measure.depth > limits.max_depth:
            raise QueryRefusedError(
                f"the query exceeds maximum operation depth of {limits.max_depth}"
            )
        if measure.aliases > limits.max_aliases:
            raise QueryRefusedError(f"the query has more than {limits.max_aliases} aliases")
        # Before the figures that grow with fragment expansion (fields, cost, comparisons): a
        # fan-out is refused by the analysis budget, the limit it is an attack on.
        units = self.visited + self.compared + measure.comparisons
        if units > limits.max_analysis_units:
            raise units_refusal(units, limits)
        if measure.fields > limits.max_fields:
            raise QueryRefusedError(
                f"the query would return more than {limits.max_fields} fields (fragments expanded)"
            )
        if measure.cost > limits.max_cost:
            raise QueryRefusedError(
                f"the query's estimated cost is over {limits.max_cost} "
                "(fields x page sizes of the lists around them)"
            )
        if measure.comparisons > limits.max_comparisons:
            raise QueryRefusedError(
                f"the query repeats fields or fragments too often (over "
                f"{limits.max_comparisons} field comparisons to check it)"
            )

    def directives(self, directives: Iterable[DirectiveNode] | None) -> None:
        for directive in directives or ():
            for argument in directive.arguments or ():
                self.value(argument.value)

    def value(self, value: ValueNode) -> None:
        self.tick()
        if isinstance(value, IntValueNode | FloatValueNode):
            if len(value.value) > self.limits.max_number_length:
                raise QueryRefusedError(
                    f"a number in the query is longer than {self.limits.max_number_length} "
                    "characters"
                )
        elif isinstance(value, ListValueNode):
            for item in value.values:
                self.value(item)
        elif isinstance(value, ObjectValueNode):
            for object_field in value.fields:
                self.value(object_field.value)


def measure_document(
    document: DocumentNode, limits: QueryLimits, *, backstop: Backstop | None = None
) -> Measure:
    """The largest figures over the document's operations and the units of the whole document;
    raises QueryRefusedError when one is over a limit, AnalysisStoppedError once `backstop` is
    set. A pure function of the document and the limits: it reads no clock."""
    walk = _Walk(document, limits, backstop)
    largest = Measure()
    try:
        for definition in document.definitions:
            if isinstance(definition, OperationDefinitionNode):
                for variable in definition.variable_definitions or ():
                    if variable.default_value is not None:
                        walk.value(variable.default_value)
                walk.directives(definition.directives)
                measure = walk.selection_set(definition.selection_set, level=0)
                walk.compared += measure.comparisons
                largest = Measure(
                    depth=max(largest.depth, measure.depth),
                    fields=max(largest.fields, measure.fields),
                    aliases=max(largest.aliases, measure.aliases),
                    cost=max(largest.cost, measure.cost),
                    comparisons=max(largest.comparisons, measure.comparisons),
                )
        # Fragments no operation spreads are validated (and refused as unused) all the same.
        for name in walk.fragments:
            if name not in walk.memo:
                walk.compared += walk.fragment(name).comparisons
    except RecursionError as error:
        raise QueryRefusedError("the query's fragments are nested too deeply") from error
    largest.units = walk.visited + walk.compared
    return largest


# The backstop of the validation running in this thread's context (validation rules are
# instantiated by graphql-core, which passes them nothing but the ValidationContext).
validation_backstop: ContextVar[Backstop | None] = ContextVar("validation_backstop", default=None)


class ValidationBackstop(ASTValidationRule):
    """Stops validation once the backstop is set (looked at every few hundred nodes;
    graphql-core visits every node with every rule, so this sees them all)."""

    def __init__(self, context: ValidationContext) -> None:
        super().__init__(context)
        self.backstop = validation_backstop.get()
        self.visited = 0

    def enter(self, node: Node, *args: Any) -> None:
        self.visited += 1
        if (
            self.backstop is not None
            and self.visited % _CHECK_EVERY == 0
            and self.backstop.is_set()
        ):
            raise AnalysisStoppedError
