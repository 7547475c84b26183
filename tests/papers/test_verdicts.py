"""Ours beside the paper: the difference and whether our mean lies inside the paper's mean ± 2 std
(its std, or ours where the paper gives none), on constructed values with known answers."""
import pandas as pd

from fedcluster.report.cells import Reported, Stat, Verdict, to_csv_frame
from fedcluster.report.tables.common import Table, with_verdicts


def test_inside_and_outside_the_papers_two_std():
    ours = Stat.of([80.0, 82.0, 84.0])                            # mean 82
    assert Verdict.of(ours, Reported(85.0, 1.0)).text() == "−3.0 OUTSIDE 2 std"    # |−3| > 2 x 1
    assert Verdict.of(ours, Reported(83.5, 1.0)).text() == "−1.5 within 2 std"
    assert Verdict.of(ours, Reported(81.0, 0.4)).within is False    # +1.0 > 2 x 0.4
    assert Verdict.of(ours, Reported(81.0, 0.5)).within is True     # the edge, 2 std exactly, is inside
    v = Verdict.of(ours, Reported(85.0))                           # no paper std: ours (2.0) is the yardstick
    assert v.within is True and v.basis == "ours" and v.text() == "−3.0 within 2 std (ours)"


def test_no_yardstick_gives_the_difference_alone_and_no_value_no_verdict():
    assert Verdict.of(Stat.of([0.7]), Reported(0.65, None, 2)).text() == "+0.05 (no std)"
    assert Verdict.of(Stat.of([]), Reported(85.0, 1.0)) is None


def test_a_verdict_column_follows_each_paper_column_and_reads_back_as_numbers():
    frame = pd.DataFrame({"method": ["a", "b"],
                          "acc %": [Stat.of([90.0, 92.0]), Stat.of([70.0])],
                          "acc paper": [Reported(91.0, 0.4), "–"],
                          "ARI": [Stat.of([0.9, 1.0]), Stat.of([0.2])],
                          "ARI paper": [Reported(0.5, 0.1, 2), Reported(0.2, None, 2)]})
    table = with_verdicts(Table(frame))
    assert list(table.frame.columns) == ["method", "acc %", "acc paper", "acc % − paper", "ARI", "ARI paper",
                                         "ARI − paper"]
    assert table.frame["acc % − paper"][0].text() == "+0.0 within 2 std" and table.frame["acc % − paper"][1] == ""
    assert table.frame["ARI − paper"][0].text() == "+0.45 OUTSIDE 2 std"
    assert table.frame["ARI − paper"][1].text() == "+0.00 (no std)"   # no paper std and one seed: no yardstick
    assert any("within the paper's mean ± 2 std" in n for n in table.notes)
    csv = to_csv_frame(table.frame)
    assert csv["ARI − paper"].round(3).tolist() == [0.45, 0.0]
    within = csv["ARI − paper within 2 std"]
    assert within.isna().tolist() == [False, True] and not bool(within[0])   # no yardstick: empty, not a guess
    assert csv["acc paper mean"].tolist()[0] == 91.0 and csv["acc paper std"].tolist()[0] == 0.4


def test_round_numbers_print_as_rounds():
    assert Stat.of([12, 12, 12], style="round").text() == "12 ± 0"
    assert Stat.of([11, 12, 14], style="round").text() == "12.3 ± 1.5"


def test_a_printed_plus_minus_zero_is_met_where_ours_rounds_to_the_printed_value():
    """'1.00 ± 0.00' says every seed of the paper gave 1.00 to the printed digits: ours is within where its mean
    rounds to it, whatever our own spread (before: our std was the yardstick, or none with one seed)."""
    assert Verdict.of(Stat.of([1.0]), Reported(1.0, 0.0, 2)).within is True
    assert Verdict.of(Stat.of([0.996, 1.0]), Reported(1.0, 0.0, 2)).within is True       # rounds to 1.00
    assert Verdict.of(Stat.of([0.9, 1.0]), Reported(1.0, 0.0, 2)).within is False        # 0.95: not the printed 1.00
    assert Verdict.of(Stat.of([99.3, 99.3]), Reported(99.1, 0.0, 1)).within is False
