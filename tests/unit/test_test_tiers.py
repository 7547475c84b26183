"""The tests are in tiers, one folder each (tests/README.md): no test file outside a tier, and every tier the
README names holds tests."""
from conftest import ROOT, TIERS


def test_every_test_file_is_in_a_tier_the_readme_names():
    tests = ROOT / "tests"
    assert not list(tests.glob("test_*.py"))   # none left in the flat folder
    found = {p.parent.name for p in tests.rglob("test_*.py")}
    assert found == set(TIERS)
    readme = (tests / "README.md").read_text()
    assert all(f"| `{tier}/` |" in readme for tier in TIERS)
