"""The list-of-columns table the upload parsers hand to the services (annotator/uploads/files/columns.py)."""

import pytest

from annotator.uploads.files.columns import Frame


def test_columns_rows_and_records_keep_their_order():
    frame = Frame({"item_id": ["a", "b", "c"], "position": range(3)})
    frame["metadata"] = "{}"  # one text for every row
    assert frame.columns == ["item_id", "position", "metadata"] and len(frame) == 3 and not frame.empty
    assert frame["position"].tolist() == [0, 1, 2] and list(frame["metadata"]) == ["{}"] * 3
    assert frame.rows([2, 0]).to_dict("records") == [
        {"item_id": "c", "position": 2, "metadata": "{}"},
        {"item_id": "a", "position": 0, "metadata": "{}"},
    ]
    assert frame.head(2)["item_id"].tolist() == ["a", "b"]
    assert frame.head(10)["item_id"].tolist() == ["a", "b", "c"]
    empty = frame.head(0)
    assert empty.empty and empty.columns == frame.columns and empty.to_dict("records") == []


def test_a_column_of_another_length_is_refused_and_changes_nothing():
    frame = Frame({"item_id": ["a", "b"]})
    with pytest.raises(ValueError, match="1 values for 2 rows"):
        frame["prompt"] = ["only one"]
    assert frame.columns == ["item_id"]


def test_a_frame_of_no_columns_can_still_have_rows():
    frame = Frame({}, 2)
    frame["row"] = [2, 3]
    assert len(frame) == 2 and frame.to_dict("records") == [{"row": 2}, {"row": 3}]
    assert Frame().empty and Frame({}, 3).to_dict("records") == [{}, {}, {}]
