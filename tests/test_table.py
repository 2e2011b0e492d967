"""Result tables render as HTML tables and as aligned text, with numbers formatted once."""

import pytest

from covpo.table import Table, concatenate, format_cell


def test_cells_are_formatted_by_type():
    assert [format_cell(v) for v in (12800, 0.123456, 4567.8, None, float("nan"), True, "PPO")] == [
        "12,800", "0.123", "4,568", "-", "-", "yes", "PPO"
    ]


def test_html_has_header_caption_rows_and_notes():
    table = Table(("algorithm", "responses to eps"), (("PPO-Lite", 3072), ("REINFORCE", None)), "Costs", ("-: not reached",))
    rendered = table._repr_html_()
    assert "<caption>Costs</caption>" in rendered and "<th>responses to eps</th>" in rendered
    assert '<td style="text-align:right">3,072</td>' in rendered and "<td style=\"text-align:left\">-</td>" in rendered
    assert "-: not reached" in rendered
    assert table.column("responses to eps") == [3072, None]


def test_text_is_aligned():
    text = str(Table(("a", "bb"), (("x", 1), ("yyy", 22))))
    assert text.splitlines() == ["a    bb", "---  --", "x    1", "yyy  22"]


def test_rows_must_match_columns_and_concatenation_needs_equal_columns():
    with pytest.raises(ValueError, match="one per column"):
        Table(("a", "b"), (("x",),))
    first, second = Table(("a",), (("x",),), notes=("n",)), Table(("a",), (("y",),), notes=("n",))
    assert concatenate([first, second]).rows == (("x",), ("y",)) and concatenate([first, second]).notes == ("n",)
    with pytest.raises(ValueError, match="share their columns"):
        concatenate([first, Table(("b",), ())])


def test_bad_tables_raise_naming_the_argument():
    with pytest.raises(ValueError, match="columns must be a sequence of strings"):
        Table("ab", ())
    with pytest.raises(ValueError, match=r"columns\[1\] must be a string"):
        Table(("a", 3), ())
    with pytest.raises(ValueError, match=r"rows\[0\] must be a sequence of cells"):
        Table(("a",), (3,))
    with pytest.raises(ValueError, match="caption must be a string"):
        Table(("a",), (), caption=None)
    with pytest.raises(ValueError, match="notes must be a sequence of strings"):
        Table(("a",), (), notes="a note")
    with pytest.raises(ValueError, match="name must be one of the columns"):
        Table(("a",), (("x",),)).column("b")
    with pytest.raises(ValueError, match="tables must be a non-empty sequence"):
        concatenate([])
    with pytest.raises(ValueError, match=r"tables\[1\] must be a Table"):
        concatenate([Table(("a",), ()), None])


def test_lists_are_stored_as_tuples():
    table = Table(["a", "b"], [["x", 1]], notes=["n"])
    assert table.columns == ("a", "b") and table.rows == (("x", 1),) and table.notes == ("n",)
