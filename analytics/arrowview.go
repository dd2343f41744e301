package analytics

/*
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

// The Arrow C data and stream interfaces (arrow.apache.org/docs/format/CStreamInterface.html),
// as every producer and consumer declares them.
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4
struct ArrowSchema {
	const char* format;
	const char* name;
	const char* metadata;
	int64_t flags;
	int64_t n_children;
	struct ArrowSchema** children;
	struct ArrowSchema* dictionary;
	void (*release)(struct ArrowSchema*);
	void* private_data;
};
struct ArrowArray {
	int64_t length;
	int64_t null_count;
	int64_t offset;
	int64_t n_buffers;
	int64_t n_children;
	const void** buffers;
	struct ArrowArray** children;
	struct ArrowArray* dictionary;
	void (*release)(struct ArrowArray*);
	void* private_data;
};
#endif
#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE
struct ArrowArrayStream {
	int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
	int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
	const char* (*get_last_error)(struct ArrowArrayStream*);
	void (*release)(struct ArrowArrayStream*);
	void* private_data;
};
#endif

// A schema the wrapped stream handed out: the producer's struct, kept until the stream is
// released (or until the consumer releases its copy, if it ever does).
typedef struct fb_handed {
	struct ArrowSchema schema;
	struct fb_handed* next;
} fb_handed;

typedef struct {
	struct ArrowArrayStream inner;
	fb_handed* handed;
} fb_stream;

static uint64_t fb_schemas_handed, fb_schemas_released;

static void fb_release_handed(fb_handed* h) {
	if (h->schema.release != NULL) {
		h->schema.release(&h->schema);
		h->schema.release = NULL;
		__atomic_add_fetch(&fb_schemas_released, 1, __ATOMIC_RELAXED);
	}
}

// fb_schema_release is the release callback of every schema the wrapper hands out.
static void fb_schema_release(struct ArrowSchema* s) {
	fb_release_handed((fb_handed*)s->private_data);
	s->release = NULL;
}

static int fb_get_schema(struct ArrowArrayStream* st, struct ArrowSchema* out) {
	fb_stream* p = (fb_stream*)st->private_data;
	fb_handed* h = (fb_handed*)calloc(1, sizeof(fb_handed));
	if (h == NULL) {
		return ENOMEM;
	}
	int rc = p->inner.get_schema(&p->inner, &h->schema);
	if (rc != 0) {
		free(h);
		return rc;
	}
	h->next = p->handed;
	p->handed = h;
	__atomic_add_fetch(&fb_schemas_handed, 1, __ATOMIC_RELAXED);
	*out = h->schema;
	out->release = fb_schema_release;
	out->private_data = h;
	return 0;
}

static int fb_get_next(struct ArrowArrayStream* st, struct ArrowArray* out) {
	fb_stream* p = (fb_stream*)st->private_data;
	return p->inner.get_next(&p->inner, out);
}

static const char* fb_get_last_error(struct ArrowArrayStream* st) {
	fb_stream* p = (fb_stream*)st->private_data;
	return p->inner.get_last_error(&p->inner);
}

static void fb_release(struct ArrowArrayStream* st) {
	fb_stream* p = (fb_stream*)st->private_data;
	for (fb_handed* h = p->handed; h != NULL;) {
		fb_handed* next = h->next;
		fb_release_handed(h);
		free(h);
		h = next;
	}
	if (p->inner.release != NULL) {
		p->inner.release(&p->inner);
	}
	free(p);
	st->private_data = NULL;
	st->release = NULL;
}

// fb_wrap moves the stream src into dst, a stream that keeps every schema it hands out.
static int fb_wrap(struct ArrowArrayStream* src, struct ArrowArrayStream* dst) {
	fb_stream* p = (fb_stream*)calloc(1, sizeof(fb_stream));
	if (p == NULL) {
		return ENOMEM;
	}
	p->inner = *src;
	src->release = NULL;
	dst->get_schema = fb_get_schema;
	dst->get_next = fb_get_next;
	dst->get_last_error = fb_get_last_error;
	dst->release = fb_release;
	dst->private_data = p;
	return 0;
}

static void fb_stream_release(struct ArrowArrayStream* st) {
	if (st->release != NULL) {
		st->release(st);
	}
}

static void fb_schema_counts(uint64_t* handed, uint64_t* released) {
	*handed = __atomic_load_n(&fb_schemas_handed, __ATOMIC_RELAXED);
	*released = __atomic_load_n(&fb_schemas_released, __ATOMIC_RELAXED);
}
*/
import "C"

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/arrowmapping"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// Registering Arrow batches with DuckDB.
//
// duckdb-go's Arrow.RegisterView hands DuckDB (duckdb_arrow_scan) a stream exported by
// arrow-go. DuckDB asks that stream for its schema five times per view read once (in
// duckdb_arrow_scan and at each bind) and releases none of those schemas: it nulls their
// release callbacks and leaves them to the producer, and arrow-go's stream does not keep
// them. Each is a C allocation of the whole schema, so every consumer transaction leaked about
// 24 KB of malloc'd memory (TestRegisterArrowViewReleasesSchemas measures it): 4-5 MB a minute
// at 150-200k events/s, the growth of the service's memory the ingest benchmark measured
// (jemalloc heap profiles of a 12-minute run: arrow-go's cdata allocations the only growing
// entry).
//
// RegisterArrowView does what RegisterView does through a stream of its own in front of
// arrow-go's: it keeps every schema it hands out and releases them with the stream.

var errArrowScan = errors.New("analytics: DuckDB's arrow scan refused the batch")

// RegisterArrowView makes name a view over rr on dc, a duckdb-go connection (from
// sql.Conn.Raw). The view is persistent (DuckDB's arrow scan; create and drop it inside one
// transaction). release must be called once nothing reads the view any more (after the
// statements that use it); it frees the stream and every schema DuckDB was handed.
func RegisterArrowView(dc driver.Conn, rr array.RecordReader, name string) (release func(), err error) {
	conn, err := rawConnection(dc)
	if err != nil {
		return nil, err
	}
	src := (*C.struct_ArrowArrayStream)(C.calloc(1, C.sizeof_struct_ArrowArrayStream))
	defer C.free(unsafe.Pointer(src))
	cdata.ExportRecordReader(rr, (*cdata.CArrowArrayStream)(unsafe.Pointer(src)))
	stream := (*C.struct_ArrowArrayStream)(C.calloc(1, C.sizeof_struct_ArrowArrayStream))
	if rc := C.fb_wrap(src, stream); rc != 0 {
		C.fb_stream_release(src)
		C.free(unsafe.Pointer(stream))
		return nil, fmt.Errorf("analytics: arrow stream: error %d", int(rc))
	}
	release = func() {
		C.fb_stream_release(stream)
		C.free(unsafe.Pointer(stream))
	}
	if arrowmapping.ArrowScan(conn, name, arrowmapping.ArrowStream{Ptr: unsafe.Pointer(stream)}) == mapping.StateError {
		release()
		return nil, errArrowScan
	}
	return release, nil
}

// rawConnection is the DuckDB connection behind a duckdb-go connection. duckdb-go does not
// export it, so it is read from the unexported field that Arrow.RegisterView uses; a
// duckdb-go whose Conn has another shape fails here (and in the tests), not in DuckDB.
func rawConnection(dc driver.Conn) (mapping.Connection, error) {
	c, ok := dc.(*duckdb.Conn)
	if !ok || c == nil {
		return mapping.Connection{}, fmt.Errorf("analytics: not a duckdb-go connection: %T", dc)
	}
	v := reflect.ValueOf(c).Elem()
	f, closed := v.FieldByName("conn"), v.FieldByName("closed")
	if !f.IsValid() || f.Type() != reflect.TypeFor[mapping.Connection]() || !closed.IsValid() || closed.Kind() != reflect.Bool {
		return mapping.Connection{}, errors.New("analytics: duckdb-go's Conn has changed shape (conn mapping.Connection, closed bool expected)")
	}
	if closed.Bool() {
		return mapping.Connection{}, errors.New("analytics: the DuckDB connection is closed")
	}
	p := f.FieldByName("Ptr").UnsafePointer()
	if p == nil {
		return mapping.Connection{}, errors.New("analytics: the DuckDB connection is closed")
	}
	return mapping.Connection{Ptr: p}, nil
}

// arrowSchemaCounts reports how many schemas RegisterArrowView's streams have handed out and
// how many of those were released (tests).
func arrowSchemaCounts() (handed, released uint64) {
	var h, r C.uint64_t
	C.fb_schema_counts(&h, &r)
	return uint64(h), uint64(r)
}
