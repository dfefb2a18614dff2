/*
 * wl_vacation.c - the travel reservation workload: tables of cars, flights
 * and rooms (id -> capacity and price) and of customers (id -> list of
 * reservations), each a transactional red-black tree. Clients make
 * reservations, delete customers (releasing what they hold) and update the
 * tables; every client operation is one medium-size transaction.
 *
 * Owns the reservation model and its consistency check. It must never touch
 * shared state outside a transaction while workers run, and never free
 * memory unlinked during the run (it goes to the graveyard).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "rbtree_tm.h"
#include "tm.h"
#include "json_writer.h"

enum { VAC_CAR, VAC_FLIGHT, VAC_ROOM, VAC_TYPES };
enum { VAC_MAX_QUERIES = 64, VAC_CAPACITY_STEP = 100 };

static const char *const vac_type_name[VAC_TYPES] = {"car", "flight", "room"};

struct vac_item {
    long total;
    long free;
    long used;
    long price;
};

struct vac_res {
    long type;
    long id;
    long price;
    struct vac_res *next;
};

struct vac_customer {
    struct vac_res *list;
};

struct vacation {
    struct rbt items[VAC_TYPES];
    struct rbt customers;
    struct rbt_grave grave;
    long relations, queries, query_pct, user_pct, range;
    long sabotage;
    /* Totals, added once per thread when its worker ends. */
    long reservations, deletions, updates;
};

static struct vac_item *vac_item_new(long capacity, long price)
{
    struct vac_item *it = malloc(sizeof *it);
    if (it)
        *it = (struct vac_item){capacity, capacity, 0, price};
    return it;
}

static int vac_setup(const struct bench_opts *o, void **state)
{
    const char *preset = bench_opt_str(o, "preset", "low");
    int high = !strcmp(preset, "high");
    if (!high && strcmp(preset, "low")) {
        fprintf(stderr, "vacation: --preset '%s': expected low or high\n", preset);
        return -1;
    }
    struct vacation *v = calloc(1, sizeof *v);
    if (!v) {
        fprintf(stderr, "vacation: out of memory\n");
        return -1;
    }
    v->relations = bench_opt_long(o, "relations", 16384, 1, 1L << 24);
    v->queries = bench_opt_long(o, "queries", high ? 4 : 2, 1, VAC_MAX_QUERIES);
    v->query_pct = bench_opt_long(o, "query-range", high ? 60 : 90, 1, 100);
    v->user_pct = bench_opt_long(o, "user", high ? 90 : 98, 0, 100);
    v->sabotage = bench_opt_long(o, "sabotage", 0, 0, 1);
    *state = v;
    if (bench_opt_error)
        return -1;
    v->range = v->relations * v->query_pct / 100;
    if (v->range < 1)
        v->range = 1;

    /* Setup draws from its own stream, independent of the workers. */
    struct bench_thread rng = {.rng = o->seed * 0x9E3779B97F4A7C15ULL + 1};
    for (int t = 0; t < VAC_TYPES; t++)
        rbt_init(&v->items[t]);
    rbt_init(&v->customers);
    for (long id = 1; id <= v->relations; id++) {
        for (int t = 0; t < VAC_TYPES; t++) {
            struct vac_item *it = vac_item_new(VAC_CAPACITY_STEP * (1 + (long)(bench_rand(&rng) % 5)),
                                               50 + 10 * (long)(bench_rand(&rng) % 50));
            if (!it || !rbt_insert(&v->items[t], id, it, 0))
                goto oom;
        }
        struct vac_customer *c = calloc(1, sizeof *c);
        if (!c || !rbt_insert(&v->customers, id, c, 0))
            goto oom;
    }
    return 0;
oom:
    fprintf(stderr, "vacation: out of memory building %ld relations\n", v->relations);
    return -1;
}

/* Reserves one unit of it for customer c (inside a transaction). */
static TM_SAFE void vac_reserve(struct vac_customer *c, struct vac_item *it, long type, long id, long price)
{
    TM_WRITE(it->free, TM_READ(it->free) - 1);
    TM_WRITE(it->used, TM_READ(it->used) + 1);
    struct vac_res *r = TM_MALLOC(sizeof *r);
    if (!r)
        return;
    /* r is private to this attempt until linked below. */
    r->type = type;
    r->id = id;
    r->price = price;
    r->next = TM_READ_P(c->list);
    TM_WRITE_P(c->list, r);
}

/* One client operation: its random inputs and what its transaction did.
 * Transactions live in their own non-inlined functions and exchange data
 * only through this struct, so no caller variable sits in the frame that a
 * restart (longjmp) rewinds. */
struct vac_op {
    long cid;
    long type[VAC_MAX_QUERIES], id[VAC_MAX_QUERIES];
    long price[VAC_MAX_QUERIES]; /* update: new price, 0 = remove capacity */
    int done;                    /* reserve/delete: 1 if it changed something */
    int ndead;
    void *dead[2 * VAC_MAX_QUERIES + 2]; /* memory the transaction unlinked */
};

static void vac_draw(struct vacation *v, struct bench_thread *bt, struct vac_op *op, int with_price)
{
    op->cid = 1 + (long)bench_rand_below(bt, (uint64_t)v->range);
    for (long i = 0; i < v->queries; i++) {
        op->type[i] = (long)bench_rand_below(bt, VAC_TYPES);
        op->id[i] = 1 + (long)bench_rand_below(bt, (uint64_t)v->range);
        op->price[i] = with_price && bench_rand_below(bt, 2) ? 50 + 10 * (long)bench_rand_below(bt, 50) : 0;
    }
}

/* Queries the drawn items and reserves the cheapest available one of each
 * queried type for the customer (created if absent). */
static __attribute__((noinline)) void vac_make_reservation(struct vacation *v, struct vac_op *op)
{
    TM_BEGIN("vacation-reserve")
        struct vac_item *best[VAC_TYPES] = {NULL, NULL, NULL};
        long best_id[VAC_TYPES] = {0, 0, 0}, best_price[VAC_TYPES] = {0, 0, 0};
        op->done = 0;
        for (long i = 0; i < v->queries; i++) {
            long t = op->type[i];
            struct vac_item *it = rbt_get(&v->items[t], op->id[i], 1);
            if (!it || TM_READ(it->free) <= 0)
                continue;
            long price = TM_READ(it->price);
            if (!best[t] || price < best_price[t]) {
                best[t] = it;
                best_id[t] = op->id[i];
                best_price[t] = price;
            }
        }
        if (best[VAC_CAR] || best[VAC_FLIGHT] || best[VAC_ROOM]) {
            struct vac_customer *c = rbt_get(&v->customers, op->cid, 1);
            if (!c) {
                c = TM_MALLOC(sizeof *c);
                if (c) {
                    c->list = NULL;
                    rbt_insert(&v->customers, op->cid, c, 1);
                }
            }
            for (int t = 0; c && t < VAC_TYPES; t++) {
                if (best[t]) {
                    vac_reserve(c, best[t], t, best_id[t], best_price[t]);
                    op->done = 1;
                }
            }
        }
    TM_END;
}

/* Deletes the customer and releases everything it reserved. */
static __attribute__((noinline)) void vac_delete_customer(struct vacation *v, struct vac_op *op)
{
    TM_BEGIN("vacation-delete")
        op->done = 0;
        op->ndead = 0;
        struct vac_customer *c = rbt_get(&v->customers, op->cid, 1);
        if (c) {
            for (struct vac_res *r = TM_READ_P(c->list); r; r = TM_READ_P(r->next)) {
                struct vac_item *it = rbt_get(&v->items[TM_READ(r->type)], TM_READ(r->id), 1);
                if (it) {
                    TM_WRITE(it->free, TM_READ(it->free) + 1);
                    TM_WRITE(it->used, TM_READ(it->used) - 1);
                }
            }
            void *val = NULL;
            op->dead[0] = rbt_remove(&v->customers, op->cid, &val, 1);
            op->dead[1] = val;
            op->ndead = 2;
            op->done = 1;
        }
    TM_END;
}

/* Adds capacity to (or creates) the drawn items, or removes free capacity
 * from them; an item nobody holds is removed from its table altogether. */
static __attribute__((noinline)) void vac_update_tables(struct vacation *v, struct vac_op *op)
{
    TM_BEGIN("vacation-update")
        op->ndead = 0;
        for (long i = 0; i < v->queries; i++) {
            struct rbt *table = &v->items[op->type[i]];
            struct vac_item *it = rbt_get(table, op->id[i], 1);
            if (op->price[i]) {
                if (it) {
                    TM_WRITE(it->total, TM_READ(it->total) + VAC_CAPACITY_STEP);
                    TM_WRITE(it->free, TM_READ(it->free) + VAC_CAPACITY_STEP);
                    TM_WRITE(it->price, op->price[i]);
                } else if ((it = TM_MALLOC(sizeof *it)) != NULL) {
                    it->total = it->free = VAC_CAPACITY_STEP;
                    it->used = 0;
                    it->price = op->price[i];
                    rbt_insert(table, op->id[i], it, 1);
                }
            } else if (it) {
                long free = TM_READ(it->free);
                if (TM_READ(it->used) == 0) {
                    void *val = NULL;
                    op->dead[op->ndead++] = rbt_remove(table, op->id[i], &val, 1);
                    op->dead[op->ndead++] = val;
                } else {
                    long n = free < VAC_CAPACITY_STEP ? free : VAC_CAPACITY_STEP;
                    TM_WRITE(it->total, TM_READ(it->total) - n);
                    TM_WRITE(it->free, free - n);
                }
            }
        }
    TM_END;
}

/* After the unlinking transaction committed: nothing reaches op->dead any
 * more (a deleted customer's reservation list goes with it). */
static void vac_bury(struct vacation *v, struct vac_op *op, int customer)
{
    if (customer && op->ndead == 2) {
        struct vac_customer *c = op->dead[1];
        for (struct vac_res *r = c->list, *next; r; r = next) {
            next = r->next;
            rbt_grave_put(&v->grave, r);
        }
    }
    for (int i = 0; i < op->ndead; i++)
        rbt_grave_put(&v->grave, op->dead[i]);
}

static void vac_worker(void *state, struct bench_thread *bt)
{
    struct vacation *v = state;
    long made = 0, deleted = 0, updates = 0;
    struct vac_op op;
    while (bench_continue(bt)) {
        long r = (long)bench_rand_below(bt, 100);
        if (r < v->user_pct) {
            vac_draw(v, bt, &op, 0);
            vac_make_reservation(v, &op);
            made += op.done;
        } else if (r & 1) {
            vac_draw(v, bt, &op, 0);
            vac_delete_customer(v, &op);
            deleted += op.done;
            vac_bury(v, &op, 1);
        } else {
            vac_draw(v, bt, &op, 1);
            vac_update_tables(v, &op);
            vac_bury(v, &op, 0);
            updates++;
        }
        bt->ops++;
    }
    __atomic_fetch_add(&v->reservations, made, __ATOMIC_RELAXED);
    __atomic_fetch_add(&v->deletions, deleted, __ATOMIC_RELAXED);
    __atomic_fetch_add(&v->updates, updates, __ATOMIC_RELAXED);
}

/* ---- check (threads have joined: plain accesses) ---- */

struct vac_count_ctx {
    struct vacation *v;
    long *held[VAC_TYPES]; /* reservations naming each id, from the customers */
    int type;
    char *msg;
    size_t cap;
};

static int vac_count_customer(long cid, void *val, void *ctx_)
{
    struct vac_count_ctx *ctx = ctx_;
    const struct vac_customer *c = val;
    for (const struct vac_res *r = c->list; r; r = r->next) {
        if (r->type < 0 || r->type >= VAC_TYPES || r->id < 1 || r->id > ctx->v->relations ||
            !rbt_get(&ctx->v->items[r->type], r->id, 0)) {
            snprintf(ctx->msg, ctx->cap, "customer %ld holds %s %ld, which is not in its table", cid,
                     r->type >= 0 && r->type < VAC_TYPES ? vac_type_name[r->type] : "?", r->id);
            return 1;
        }
        ctx->held[r->type][r->id]++;
    }
    return 0;
}

static int vac_check_item(long id, void *val, void *ctx_)
{
    struct vac_count_ctx *ctx = ctx_;
    const struct vac_item *it = val;
    const char *name = vac_type_name[ctx->type];
    if (it->free < 0 || it->used < 0 || it->used + it->free != it->total) {
        snprintf(ctx->msg, ctx->cap, "%s %ld: used %ld + free %ld != total %ld", name, id, it->used, it->free,
                 it->total);
        return 1;
    }
    if (id < 1 || id > ctx->v->relations || it->used != ctx->held[ctx->type][id]) {
        snprintf(ctx->msg, ctx->cap, "%s %ld: used %ld but customers hold %ld reservations of it", name, id,
                 it->used, id >= 1 && id <= ctx->v->relations ? ctx->held[ctx->type][id] : -1L);
        return 1;
    }
    return 0;
}

static int vac_check(void *state, char *msg, size_t cap)
{
    struct vacation *v = state;
    if (v->sabotage && v->items[VAC_CAR].root) {
        struct vac_item *it = v->items[VAC_CAR].root->val;
        it->used++;
        it->free--;
    }
    static const char *const table_name[VAC_TYPES + 1] = {"cars", "flights", "rooms", "customers"};
    for (int t = 0; t <= VAC_TYPES; t++) {
        char why[200];
        if (rbt_validate(t < VAC_TYPES ? &v->items[t] : &v->customers, why, sizeof why) < 0) {
            snprintf(msg, cap, "%s table: %s", table_name[t], why);
            return 1;
        }
    }
    struct vac_count_ctx ctx = {.v = v, .msg = msg, .cap = cap};
    int bad = 0;
    for (int t = 0; t < VAC_TYPES; t++) {
        ctx.held[t] = calloc((size_t)v->relations + 1, sizeof(long));
        if (!ctx.held[t]) {
            snprintf(msg, cap, "out of memory");
            bad = 1;
        }
    }
    if (!bad)
        bad = rbt_foreach(&v->customers, vac_count_customer, &ctx);
    for (int t = 0; t < VAC_TYPES && !bad; t++) {
        ctx.type = t;
        bad = rbt_foreach(&v->items[t], vac_check_item, &ctx);
    }
    for (int t = 0; t < VAC_TYPES; t++)
        free(ctx.held[t]);
    return bad;
}

static void vac_json(void *state, struct jw *w)
{
    struct vacation *v = state;
    jw_ki64(w, "relations", v->relations);
    jw_ki64(w, "queries", v->queries);
    jw_ki64(w, "query_range", v->query_pct);
    jw_ki64(w, "user", v->user_pct);
    jw_ki64(w, "reservations", v->reservations);
    jw_ki64(w, "deleted_customers", v->deletions);
    jw_ki64(w, "table_updates", v->updates);
}

static void vac_free_customer(void *p)
{
    struct vac_customer *c = p;
    for (struct vac_res *r = c->list, *next; r; r = next) {
        next = r->next;
        free(r);
    }
    free(c);
}

static void vac_teardown(void *state)
{
    struct vacation *v = state;
    if (!v)
        return;
    for (int t = 0; t < VAC_TYPES; t++)
        rbt_destroy(&v->items[t], free);
    rbt_destroy(&v->customers, vac_free_customer);
    rbt_grave_free(&v->grave);
    free(v);
}

struct workload wl_vacation = {
    .name = "vacation",
    .help = "  --preset low|high   low: --queries 2 --query-range 90 --user 98; high: 4, 60, 90 (default low)\n"
            "  --relations N       items per table and initial customers (default 16384)\n"
            "  --queries N         items queried per operation, 1..64\n"
            "  --query-range P     percent of the ids that operations touch (smaller = more contention)\n"
            "  --user P            percent of operations that make reservations; the rest delete\n"
            "                      customers or update the tables, half each\n",
    .setup = vac_setup,
    .worker = vac_worker,
    .check = vac_check,
    .json_extra = vac_json,
    .teardown = vac_teardown,
};
