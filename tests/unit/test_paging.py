"""Pages cut while a list is still being read: in storage-key order, never wrong."""

from typing import Any

from kueue_graphql.kube.paging import PageCollector, PageRequest, order_key, page_of


def obj(namespace: str, name: str) -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": name}}


def names(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in items]


def test_order_is_the_storage_key_order() -> None:
    # etcd keys "team-a/x" < "team/x" ("-" sorts before "/"), which is what kubectl -A shows.
    keys = ["team/x", "team-a/x", "team0/x", "a/b"]
    by_key = sorted(keys)
    by_order = sorted(keys, key=lambda k: order_key(*k.split("/")))
    assert by_order == by_key


def test_collector_stops_once_the_page_and_one_more_are_in_hand() -> None:
    chunks = [[obj("a", "1"), obj("a", "2")], [obj("a", "3"), obj("b", "1")], [obj("c", "1")]]
    collector = PageCollector(PageRequest(first=2, after=("a", "1"), count_all=False))
    read = 0
    for chunk in chunks:
        read += 1
        collector.observe(chunk)
        if collector.add(chunk):
            break
    page = collector.page(complete=False)
    assert read == 2
    assert names(page.items) == [("a", "2"), ("a", "3")]
    assert page.has_next
    assert page.total_count is None


def test_collector_reads_on_when_a_count_is_wanted() -> None:
    collector = PageCollector(PageRequest(first=1, count_all=True))
    collector.observe([obj("a", "1"), obj("a", "2")])
    assert not collector.add([obj("a", "1"), obj("a", "2")])
    assert collector.page(complete=True).total_count == 2


def test_out_of_order_chunks_are_read_to_the_end_and_sorted() -> None:
    collector = PageCollector(PageRequest(first=1, count_all=False))
    chunk = [obj("b", "1"), obj("a", "1")]
    collector.observe(chunk)
    assert not collector.add(chunk)
    page = collector.page(complete=True)
    assert names(page.items) == [("a", "1")]
    assert page.has_next
    assert page.total_count == 2


def test_page_of_everything() -> None:
    page = page_of([obj("b", "1"), obj("a", "1")], None)
    assert names(page.items) == [("a", "1"), ("b", "1")]
    assert not page.has_next
