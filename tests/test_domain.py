import pytest

from ektelo_pgm.domain import Domain


def test_basic_accessors():
    d = Domain(["a", "b", "c"], [2, 3, 4])
    assert d.attrs == ("a", "b", "c") and d.shape == (2, 3, 4)
    assert d.size() == 24 and d.size(["c", "a"]) == 8
    assert len(d) == 3 and list(d) == ["a", "b", "c"] and "b" in d and d["c"] == 4
    assert d.project(["c", "a"]) == Domain(["c", "a"], [4, 2])
    assert d.marginalize(["b"]) == Domain(["a", "c"], [2, 4])
    assert d.canonical(["c", "a"]) == ("a", "c")
    assert d.axes(["c", "a"]) == (2, 0)
    assert Domain.fromdict({"a": 2, "b": 3, "c": 4}) == d
    assert d != Domain(["a", "b", "c"], [2, 3, 5])
    assert hash(d) == hash(Domain(["a", "b", "c"], [2, 3, 4]))


def test_size_is_exact_for_huge_domains():
    d = Domain([f"x{i}" for i in range(40)], [10] * 40)
    assert d.size() == 10**40


def test_merge():
    d = Domain(["a", "b"], [2, 3]).merge(Domain(["b", "c"], [3, 5]))
    assert d == Domain(["a", "b", "c"], [2, 3, 5])
    with pytest.raises(ValueError, match="'b' has size 3 here but 4"):
        Domain(["a", "b"], [2, 3]).merge(Domain(["b"], [4]))


@pytest.mark.parametrize(
    "attrs, shape, message",
    [
        (["a", "b"], [2], "2 attribute names but 1 sizes"),
        (["a", "a"], [2, 2], "duplicate attribute names \\['a'\\]"),
        (["a"], [0], "'a' has size 0"),
        (["a"], [2.5], "'a' has size 2.5"),
    ],
)
def test_bad_domains(attrs, shape, message):
    with pytest.raises(ValueError, match=message):
        Domain(attrs, shape)


def test_unknown_and_repeated_attributes():
    d = Domain(["a", "b"], [2, 3])
    with pytest.raises(KeyError, match="'z'"):
        d.project(["a", "z"])
    with pytest.raises(ValueError, match="repeat"):
        d.project(["a", "a"])
    with pytest.raises(KeyError, match="'z'"):
        d["z"]
