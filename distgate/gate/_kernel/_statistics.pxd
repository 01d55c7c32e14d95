# The compiled gate's test of one candidate (y, x): the statistics of kld, mis, cst, dqt
# and exposure from the running sums, their critical values, and check, which asks the
# chosen metrics in the user's order (as distgate.gate.checks does in Python), all of
# them or those of some families.
#
# Every expression is the Python loop's, operation for operation and in the same order,
# so that both give the same floating-point results to the last bit (the extension is
# built without contraction of multiplications and additions: see setup.py).

from libc.math cimport INFINITY, NAN, fabs, isinf, isnan, log2, sqrt
from libc.stdint cimport int64_t

from distgate.gate._kernel._bundles cimport (
    CANDIDATE,
    CHECKED_TOTAL,
    CST,
    CST_FAMILY,
    DQT,
    DQT_FAMILY,
    KEYED_FAMILY,
    KLD,
    LN2,
    MIS,
    PRESENT_TARGETS,
    TIE_ABSOLUTE,
    TIE_RELATIVE,
    ZERO,
    Counts,
    Tables,
    Work,
)
from distgate.gate._kernel._cst cimport candidate_statistic


cdef inline bint is_below(double stat, double crit) noexcept nogil:
    """distgate.stats.critical.below for the kernel."""
    return stat < crit - (TIE_RELATIVE * fabs(crit) + TIE_ABSOLUTE)


cdef inline double row_distance(
    const Counts* c, Py_ssize_t y, Py_ssize_t extra, int64_t n, const double* logp
) noexcept nogil:
    """D(y) summed over q = c/n in domain order (one more tuple at ``extra``)."""
    cdef double d = 0.0
    cdef double q
    cdef int64_t count
    cdef Py_ssize_t i
    cdef const int64_t* row = c.C + y * c.X
    for i in range(c.X):
        count = row[i] + (1 if i == extra else 0)
        if count > 0:
            q = <double>count / <double>n
            d += q * (log2(q) - logp[i])
    if fabs(d) < ZERO:
        d = 0.0
    return d


# ---- critical values: Monte Carlo below the floor (use_mc) or below a test's own
# hand-over size, its asymptotic value times the tabulated correction from there
# (distgate.stats.critical; the tables come from distgate.gate._compiled_loop.kernel_tables)


cdef inline bint use_mc(int64_t total, const Tables* t) noexcept nogil:
    return t.auto_mode and total < t.floor_size


cdef inline double scaled(const double* table, Py_ssize_t length, int64_t n) noexcept nogil:
    """table[n]; its last entry past its end."""
    return table[n if n < length - 1 else length - 1]


cdef inline double kld_critical(int64_t n, bint mc, const Tables* t) noexcept nogil:
    if t.domain <= 1 or n <= 0:
        return NAN
    if mc or n < t.kld_switch:
        return t.kld_mc[n]
    return t.chi2[t.domain - 1] / (2.0 * <double>n * LN2) * scaled(
        t.kld_factor, t.kld_factor_len, n
    )


cdef inline double mis_critical(int64_t N1, int64_t NY1, bint mc, const Tables* t) noexcept nogil:
    cdef int64_t df = (t.domain - 1) * NY1
    if df <= 0:
        return NAN
    if mc or N1 < t.mis_switch:
        return t.mis_mc[N1]
    return t.chi2[df] / (2.0 * <double>N1 * LN2) * scaled(t.mis_factor, t.mis_factor_len, N1)


cdef inline double cst_critical(int64_t n1, int64_t groups, bint mc, const Tables* t) noexcept nogil:
    """F_c of a target of n1 tuples whose row merges into ``groups`` groups (> 1): its
    chi-square value times the Monte Carlo factor at n1 or the measured correction."""
    if (mc and t.cst_floor) or n1 < t.cst_switch:
        return t.chi2[groups - 1] * t.cst_mc[n1]
    return t.chi2[groups - 1] * scaled(t.cst_factor, t.cst_factor_len, n1)


cdef inline (double, bint) cst_test(
    double stat, int64_t groups, int64_t n1, bint mc, const Tables* t
) noexcept nogil:
    """(critical value, passes) of a cst candidate whose row merges into ``groups`` groups:
    (NaN, True) for a single group, which leaves nothing to test."""
    if groups <= 1:
        return NAN, True
    cdef double crit = cst_critical(n1, groups, mc, t)
    return crit, is_below(stat, crit)


cdef inline double dqt_critical(int64_t N1, int64_t count, const Tables* t) noexcept nogil:
    """Q_c of a release of N1 tuples with ``count`` (>= 3) targets: by size when tabulated
    (auto), else the table of normal samples by count."""
    if t.dqt_sized_len > 0:
        return scaled(t.dqt_sized, t.dqt_sized_len, N1)
    return t.dixon[count]


cdef inline (double, int64_t) dixon_statistic(const double* d, Py_ssize_t length) noexcept nogil:
    """Dixon's Q over the non-NaN entries of d, in one pass: (Q or NaN, number of entries).
    Q = (d_n - d_{n-1}) / (d_n - d_1) over the sorted entries, NaN (not applicable) with
    fewer than three entries or fewer than three distinct values."""
    cdef int64_t count = 0
    cdef double largest = -INFINITY
    cdef double second = -INFINITY
    cdef double smallest = INFINITY
    cdef double first_value = NAN
    cdef double other_value = NAN
    cdef int distinct = 0
    cdef double v
    cdef Py_ssize_t i
    for i in range(length):
        v = d[i]
        if isnan(v):
            continue
        count += 1
        if v > largest:
            second = largest
            largest = v
        elif v > second:
            second = v
        if v < smallest:
            smallest = v
        if distinct == 0:
            first_value = v
            distinct = 1
        elif distinct == 1 and v != first_value:
            other_value = v
            distinct = 2
        elif distinct == 2 and v != first_value and v != other_value:
            distinct = 3
    if count < 3 or distinct < 3 or not largest > smallest:
        return NAN, count
    if isinf(largest):
        return 1.0, count
    return (largest - second) / (largest - smallest), count


cdef inline void candidate_distances(
    Py_ssize_t y, Py_ssize_t x, int64_t n1, double D1, const Tables* t, const Counts* c,
    Work* w, double* d,
) noexcept nogil:
    """d[t] = D(t) of the checked targets with the candidate added (NaN = absent); the
    candidate's D summed over q like every stored D, so equal distributions tie exactly.
    That sum is kept: released at once, the candidate's target gets exactly this D."""
    cdef Py_ssize_t k
    for k in range(c.Y):
        d[k] = c.D[k] if (c.checked[k] and c.n[k] > 0) else NAN
    if isinf(D1):
        d[y] = D1
    else:
        d[y] = row_distance(c, y, x, n1, t.logp)
        w.result[2] = d[y]
        w.counters[CANDIDATE] = y * c.X + x


cdef inline double exposure_bound(const double* e, Py_ssize_t length) noexcept nogil:
    """mean + population std of the non-NaN entries of e, summed in index order (the
    Python loop sums the same way, so both gates get the same bound to the last bit)."""
    cdef double total = 0.0
    cdef int64_t count = 0
    cdef Py_ssize_t i
    for i in range(length):
        if not isnan(e[i]):
            total += e[i]
            count += 1
    cdef double mean = total / <double>count
    cdef double spread = 0.0
    for i in range(length):
        if not isnan(e[i]):
            spread += (e[i] - mean) * (e[i] - mean)
    return mean + sqrt(spread / <double>count)


cdef inline int64_t family_of(int64_t m) noexcept nogil:
    if m == CST:
        return CST_FAMILY
    if m == DQT:
        return DQT_FAMILY
    return KEYED_FAMILY


cdef inline bint check(
    Py_ssize_t y, Py_ssize_t x, const Tables* t, const Counts* c, Work* w, int64_t families
) noexcept nogil:
    """Is the checked release plus (y, x) safe under the chosen metrics of ``families``
    (ALL_FAMILIES: every chosen metric)? result[0], result[1] = the statistic and critical
    value that decided (the first blocking metric's, else the first metric's)."""
    cdef int64_t count_x = c.C[y * c.X + x]
    cdef int64_t n1 = c.n[y] + 1
    cdef int64_t N1 = c.tally[CHECKED_TOTAL] + 1
    cdef int64_t NY1 = c.tally[PRESENT_TARGETS] + (1 if c.n[y] == 0 else 0)
    cdef bint mc1 = use_mc(N1, t)
    cdef bint possible = not isinf(t.logp[x])
    cdef double S1, L1, D1, stat, crit, old
    cdef int64_t groups, count, k, m, size
    cdef Py_ssize_t j
    cdef bint ok
    cdef bint have_first = False
    cdef double* d
    if possible:
        S1 = c.S[y] - t.xlogx[count_x] + t.xlogx[count_x + 1]
        L1 = c.L[y] + t.logp[x]
        D1 = (S1 - L1 - t.xlogx[n1]) / <double>n1
        if fabs(D1) < ZERO:
            D1 = 0.0
    else:
        D1 = INFINITY
    for k in range(t.n_metrics):
        m = t.metrics[k]
        if (family_of(m) & families) == 0:
            continue
        ok = True
        stat = NAN
        crit = NAN
        if m == KLD:
            stat = D1
            crit = kld_critical(n1, mc1, t)
            ok = isnan(crit) or is_below(D1, crit)
        elif m == MIS:
            old = c.term[y] if c.n[y] > 0 else 0.0
            stat = (c.weighted[0] - old + <double>n1 * D1) / <double>N1
            crit = mis_critical(N1, NY1, mc1, t)
            ok = isnan(crit) or is_below(stat, crit)
        elif m == CST:
            stat, groups = candidate_statistic(y, x, t, c, w)
            crit, ok = cst_test(stat, groups, n1, mc1, t)
        else:  # DQT and EXPOSURE look at every checked target
            d = w.values
            candidate_distances(y, x, n1, D1, t, c, w, d)
            if m == DQT:
                stat, count = dixon_statistic(d, c.Y)
                if count >= 3:
                    crit = dqt_critical(N1, count, t)
                ok = isnan(stat) or is_below(stat, crit)
            else:
                for j in range(c.Y):
                    size = n1 if j == y else c.n[j]
                    d[j] = <double>size / <double>N1 * d[j]
                stat = d[y]
                crit = exposure_bound(d, c.Y)
                ok = is_below(stat, crit) or stat == 0
        ok = ok and possible
        if not ok:
            w.result[0] = stat
            w.result[1] = crit
            return False
        if not have_first:
            have_first = True
            w.result[0] = stat
            w.result[1] = crit
    return True


cdef inline bint check_apart(
    Py_ssize_t y, Py_ssize_t x, int64_t families, const Tables* t, const Counts* c, Work* w
) noexcept nogil:
    """check of some families, for the rechecks that need it only for the rare cell near
    its bound."""
    return check(y, x, t, c, w, families)
