package storage

// Viewers are identified readers: an integer id per address, per tenant (DESIGN §11).
//
//	t/<tenant>/viewer/<email>    viewer id
//	t/<tenant>/viewerid/<id>     email

func viewerKey(t Tenant, email string) []byte { return cat(t.prefix(), []byte("viewer/"+email)) }
func viewerIDKey(t Tenant, id int64) []byte {
	return cat(t.prefix(), []byte("viewerid/"), u64(uint64(id)))
}

// ViewerID finds the viewer id of an address.
func (s *Store) ViewerID(t Tenant, email string) (int64, error) {
	v, err := s.get(viewerKey(t, email))
	if err != nil {
		return 0, err
	}
	return int64(beUint64(v)), nil
}

// ViewerEmail finds the address of a viewer id.
func (s *Store) ViewerEmail(t Tenant, id int64) (string, error) {
	v, err := s.get(viewerIDKey(t, id))
	if err != nil {
		return "", err
	}
	return string(v), nil
}

// PutViewer stages a new viewer.
func (bt *Batch) PutViewer(t Tenant, id int64, email string) {
	bt.set(viewerKey(t, email), u64(uint64(id)))
	bt.set(viewerIDKey(t, id), []byte(email))
}
