"""The plots (hgbt.plotting), rendered with the Agg backend: what is drawn
is checked against the model."""
import sys

import matplotlib
import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import hgbt  # noqa: E402
from hgbt import HistGBDTClassifier, HistGBDTRegressor, plotting  # noqa: E402
from fitted import rounds  # noqa: E402
from reference_trees import fitted, plan_frame  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def rendered(ax):
    ax.figure.canvas.draw()  # the whole figure really renders
    return ax


@pytest.mark.parametrize("importance_type", plotting.IMPORTANCE_TYPES)
def test_importance_bars_are_the_top_importances(importance_type):
    model, _ = fitted("multiclass")
    ax = rendered(plotting.plot_importance(model, importance_type, max_features=3))
    table = model.feature_importance_table()
    top = table[table["split"] > 0][importance_type].sort_values(ascending=False)[:3]
    bars = sorted(ax.patches, key=lambda bar: -bar.get_y())  # top to bottom
    assert [bar.get_width() for bar in bars] == pytest.approx(top.to_list(), rel=1e-12)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    ticks = list(ax.get_yticks())
    by_height = [labels[ticks.index(bar.get_y() + bar.get_height() / 2)] for bar in bars]
    assert by_height == list(top.index)


def test_importance_leaves_out_unused_features():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    model = HistGBDTRegressor(max_iter=5, random_state=0).fit(X, X[:, 1])
    ax = plotting.plot_importance(model, "split", max_features=None)
    used = model.feature_importance_table()["split"] > 0
    assert len(ax.patches) == used.sum() >= 1


def node_texts(ax):
    return {t.get_gid(): t.get_text() for t in ax.texts
            if (t.get_gid() or "").startswith("node")}


@pytest.mark.parametrize("kind,tree_index", [("regressor", 0), ("multiclass", 5)])
def test_tree_boxes_are_the_tree(kind, tree_index):
    model, _ = fitted(kind)  # categorical feature 3
    ax = rendered(plotting.plot_tree(model, tree_index, precision=17))
    frame = model.trees_to_dataframe()
    nodes = frame[frame["tree"] == tree_index]
    texts = node_texts(ax)
    assert len(texts) == len(nodes)
    for row in nodes.itertuples():
        text = texts[f"node{row.node}"]
        if row.is_leaf:
            assert float(text.split("\n")[0].removeprefix("value ")) == row.value
            assert f"count {row.count}" in text
        else:
            assert text.startswith(f"{row.feature} ")
            assert f"missing: {'left' if row.missing_go_to_left else 'right'}" in text
            if row.split_type == "numeric":
                assert float(text.split("\n")[0].split("<= ")[1]) == row.threshold
            else:
                shown = text.split("\n")[0].split(" in ")[1].strip("{}")
                assert shown == ", ".join(str(c) for c in row.left_categories)


def test_tree_layout_centres_parents_over_children():
    model, _ = fitted("regressor")
    ax = plotting.plot_tree(model, 2)
    frame = model.trees_to_dataframe()
    nodes = frame[frame["tree"] == 2].set_index("node")
    pos = {int(t.get_gid()[4:]): t.get_position() for t in ax.texts
           if (t.get_gid() or "").startswith("node")}
    leaves = sorted(pos[j][0] for j in nodes.index[nodes["is_leaf"]])
    assert leaves == list(range(len(leaves)))  # evenly spaced
    for j, row in nodes[~nodes["is_leaf"]].iterrows():
        assert pos[j][0] == (pos[row.left][0] + pos[row.right][0]) / 2
        assert pos[row.left][1] == pos[row.right][1] == pos[j][1] - 1


def test_learning_curve_lines_are_the_history():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = X[:, 0] + rng.normal(scale=0.5, size=600)
    model = HistGBDTRegressor(max_iter=60, learning_rate=0.3, n_iter_no_change=3,
                              eval_metric="r2", random_state=0)
    model.fit(X[:400], y[:400], X_val=X[400:], y_val=y[400:])
    ax = rendered(plotting.plot_learning_curve(model, "r2"))
    history = model.evals_result_
    lines = [line for line in ax.lines if line.get_label() in history]
    assert [line.get_label() for line in lines] == ["train", "validation"]
    for line in lines:
        np.testing.assert_array_equal(line.get_ydata(), history[line.get_label()]["r2"])
        np.testing.assert_array_equal(line.get_xdata(), np.arange(model.n_iter_ + 1))
    best = [line for line in ax.lines if line.get_label().startswith("best")]
    assert len(best) == 1 and list(best[0].get_xdata()) == [model.best_iteration_] * 2
    one = plotting.plot_learning_curve(model, sets="validation")  # default: first metric
    assert [line.get_label() for line in one.lines][0] == "validation"
    np.testing.assert_array_equal(one.lines[0].get_ydata(), history["validation"]["loss"])


def test_pdp_display_lines_are_partial_dependence():
    from sklearn.inspection import PartialDependenceDisplay

    model, X = fitted("multiclass")
    display = plotting.plot_partial_dependence(model, X, [0, (1, 2), 3], target=2,
                                               grid_resolution=11)
    assert isinstance(display, PartialDependenceDisplay)
    rendered(display.axes_.ravel()[0])
    line = display.lines_.ravel()[0]
    want = hgbt.partial_dependence(model, X, 0, grid_resolution=11)
    np.testing.assert_array_equal(line.get_xdata(), want.grid_values[0])
    np.testing.assert_array_equal(line.get_ydata(), want.average[2])
    pair = hgbt.partial_dependence(model, X, [1, 2], grid_resolution=11)
    np.testing.assert_array_equal(display.pd_results[1].average, pair.average)
    bars = display.axes_.ravel()[2].patches  # categorical feature 3: a bar per category
    cat = hgbt.partial_dependence(model, X, 3)
    assert [b.get_height() for b in bars] == pytest.approx(list(cat.average[2]), abs=0)


def test_two_way_pdp_decile_marks_lie_on_their_axes():
    # each feature's deciles mark its own axis: x's along the bottom edge,
    # y's along the left edge, at the deciles in data units
    model, X = fitted("regressor")
    display = plotting.plot_partial_dependence(model, X, [(1, 2)], grid_resolution=11)
    axis = rendered(display.axes_.ravel()[0])
    for marks, f, data_column in ((display.deciles_vlines_, 1, 0),
                                  (display.deciles_hlines_, 2, 1)):
        segments = np.ravel(marks)[0].get_segments()
        to_data = (np.ravel(marks)[0].get_transform() - axis.transData).transform
        ends = np.array([to_data(segment) for segment in segments])   # (9, 2 ends, xy)
        np.testing.assert_allclose(ends[:, 0, data_column], display.deciles[f])
        lo, hi = (axis.get_xlim(), axis.get_ylim())[1 - data_column]
        axes_frac = (ends[:, :, 1 - data_column] - lo) / (hi - lo)   # across the axis
        np.testing.assert_allclose(axes_frac[:, 0], 0, atol=1e-9)
        np.testing.assert_allclose(axes_frac[:, 1], 0.05, atol=1e-9)


def test_pdp_categorical_frame_and_binary():
    X, y = plan_frame()
    model = HistGBDTClassifier(max_iter=5, random_state=0).fit(X, y)
    display = plotting.plot_partial_dependence(model, X, ["plan", "age"])
    labels = [t.get_text() for t in display.axes_.ravel()[0].get_xticklabels()]
    assert labels == ["basic", "pro", "team"]
    want = hgbt.partial_dependence(model, X, "age")
    np.testing.assert_array_equal(display.lines_.ravel()[1].get_ydata(), want.average[0])


def test_bad_arguments():
    model, X = fitted("multiclass")
    for plot in (plotting.plot_importance, plotting.plot_tree,
                 plotting.plot_learning_curve):
        with pytest.raises(NotFittedError):
            plot(HistGBDTRegressor())
    with pytest.raises(ValueError, match="importance_type"):
        plotting.plot_importance(model, "weight")
    with pytest.raises(ValueError, match="max_features"):
        plotting.plot_importance(model, max_features=0)
    n_trees = len(rounds(model)) * len(model.classes_)
    with pytest.raises(ValueError, match=rf"tree_index must be an integer in \[0, "
                                         rf"{n_trees - 1}\]"):
        plotting.plot_tree(model, n_trees)
    with pytest.raises(ValueError, match="recorded no scores"):
        plotting.plot_learning_curve(model)
    scored = HistGBDTRegressor(max_iter=5, eval_metric="r2").fit(X, np.nan_to_num(X[:, 0]),
                                                                 X_val=X, y_val=np.nan_to_num(X[:, 1]))
    with pytest.raises(ValueError, match="Metric 'auc' was not recorded"):
        plotting.plot_learning_curve(scored, "auc")
    with pytest.raises(ValueError, match="Set 'test' has no 'r2' scores"):
        plotting.plot_learning_curve(scored, "r2", sets=["test"])
    with pytest.raises(ValueError, match="out of range"):
        plotting.plot_partial_dependence(model, X, [9], target=0)
    with pytest.raises(ValueError, match="needs target"):
        plotting.plot_partial_dependence(model, X, [0])
    with pytest.raises(ValueError, match="not a class"):
        plotting.plot_partial_dependence(model, X, [0], target="z")
    with pytest.raises(ValueError, match="mixes them"):
        plotting.plot_partial_dependence(model, X, [(0, 3)], target=0)


def test_missing_matplotlib_names_the_extra(monkeypatch):
    model, _ = fitted("regressor")
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match="pip install matplotlib pandas"):
        plotting.plot_importance(model)


# ------------------------------------- readable at default sizes (issue 37, item 9)
def _node_boxes(ax):
    """Display-space bounding boxes of the node boxes, by node."""
    renderer = ax.figure.canvas.get_renderer()
    return {int(t.get_gid()[4:]): t.get_bbox_patch().get_window_extent(renderer)
            for t in ax.texts if (t.get_gid() or "").startswith("node")}


def _big_tree_model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 6))
    y = 3 * X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.3 * rng.normal(size=5000)
    return HistGBDTRegressor(max_iter=3, max_leaf_nodes=63, random_state=0).fit(X, y)


def test_a_63_leaf_tree_draws_no_box_over_another():
    model = _big_tree_model()
    assert int(model.trees_to_dataframe().query("tree == 0")["is_leaf"].sum()) == 63
    ax = rendered(plotting.plot_tree(model, 0))
    boxes = list(_node_boxes(ax).values())
    assert len(boxes) == 125
    overlaps = [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]
    assert not overlaps
    # every box lies inside the figure
    width, height = ax.figure.canvas.get_width_height()
    assert all(b.x0 >= 0 and b.y0 >= 0 and b.x1 <= width and b.y1 <= height for b in boxes)


def test_max_depth_draws_the_top_of_the_tree():
    model = _big_tree_model()
    frame = model.trees_to_dataframe().query("tree == 0").set_index("node")
    ax = rendered(plotting.plot_tree(model, 0, max_depth=2))
    drawn = _node_boxes(ax)
    assert set(drawn) == set(frame.index[frame["depth"] <= 2])
    cut = [t for t in ax.texts if (t.get_gid() or "").startswith("node")
           and t.get_text().startswith("...")]
    # a cut node names its leaves; together they are the tree's leaves but
    # those drawn above the cut
    below = sum(int(t.get_text().split()[1]) for t in cut)
    leaves_above = int((frame["is_leaf"] & (frame["depth"] <= 2)).sum())
    assert below + leaves_above == int(frame["is_leaf"].sum())
    assert f"depth 2 of {int(frame['depth'].max())} shown" in ax.get_title()
    with pytest.raises(ValueError, match="max_depth"):
        plotting.plot_tree(model, 0, max_depth=-1)


def test_learning_curve_scale_and_titles():
    model = _big_tree_model().set_params(max_iter=60, early_stopping=True)
    model.fit(*_xy_for(model))
    ax = plotting.plot_learning_curve(model)
    assert ax.get_yscale() == "log"  # a loss falling over decades
    assert ax.get_ylabel() == "loss (log scale)" and ax.get_title() == "Learning curve: loss"
    assert plotting.plot_learning_curve(model, yscale="linear").get_yscale() == "linear"
    with pytest.raises(ValueError, match="yscale"):
        plotting.plot_learning_curve(model, yscale="symlog")
    ax = plotting.plot_importance(model)
    assert ax.get_title() == "Feature importance: total gain of the feature's splits"
    assert ax.get_xlabel() == "total gain of the feature's splits (total_gain)"


def _xy_for(model):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 6))
    return X, 3 * X[:, 0] + np.sin(2 * X[:, 1]) + 0.3 * rng.normal(size=5000)


def test_multiclass_partial_dependence_names_its_class_and_scale():
    X, y = _xy_for(None)
    labels = np.array(["low", "mid", "high"])[np.digitize(y, [-1, 1])]
    model = HistGBDTClassifier(max_iter=10, random_state=0).fit(X, labels)
    display = plotting.plot_partial_dependence(model, X, [0, 1], target="high")
    assert display.figure_.get_suptitle() == ("Class 'high': partial dependence of its "
                                              "raw score, per-class log-odds")
    assert display.axes_[0, 0].get_ylabel() == ("partial dependence\n(raw score, "
                                                "per-class log-odds)")
    regressor = HistGBDTRegressor(max_iter=5).fit(X, y)
    display = plotting.plot_partial_dependence(regressor, X, [0])
    assert display.axes_[0, 0].get_ylabel() == "partial dependence\n(prediction)"
