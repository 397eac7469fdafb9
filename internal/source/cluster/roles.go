package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/modwright/modwright/internal/engine"
)

// SubjectIndex is the field index of RoleBindings and ClusterRoleBindings
// by subject: "User:NAME", "Group:NAME", "ServiceAccount:NAMESPACE:NAME"
// (a subject's namespace defaults to its RoleBinding's).
const SubjectIndex = "modwright.subjects"

// SubjectKeys indexes a binding's subjects (for IndexField).
func SubjectKeys(obj client.Object) []string {
	var subjects []rbacv1.Subject
	ns := ""
	switch b := obj.(type) {
	case *rbacv1.RoleBinding:
		subjects, ns = b.Subjects, b.Namespace
	case *rbacv1.ClusterRoleBinding:
		subjects = b.Subjects
	}
	var keys []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			keys = append(keys, "User:"+s.Name)
		case rbacv1.GroupKind:
			keys = append(keys, "Group:"+s.Name)
		case rbacv1.ServiceAccountKind:
			sns := s.Namespace
			if sns == "" {
				sns = ns
			}
			if sns != "" {
				keys = append(keys, "ServiceAccount:"+sns+":"+s.Name)
			}
		}
	}
	return keys
}

// IndexSubjects registers SubjectIndex on both binding kinds; call it
// before the cache starts.
func IndexSubjects(ctx context.Context, idx client.FieldIndexer) error {
	for _, obj := range []client.Object{&rbacv1.RoleBinding{}, &rbacv1.ClusterRoleBinding{}} {
		if err := idx.IndexField(ctx, obj, SubjectIndex, SubjectKeys); err != nil {
			return fmt.Errorf("indexing %T by subject: %w", obj, err)
		}
	}
	return nil
}

// Roles is the engine's RoleReader in the cluster: the RBAC roles bound to
// a user, read from the manager's informer caches through SubjectIndex
// (no scan of every binding), as Kyverno names them: roles are
// "namespace:name" of the Roles bound by RoleBindings in any namespace;
// clusterRoles the ClusterRoles bound by ClusterRoleBindings and by the
// RoleBindings of the request's namespace. Both sorted, without repeats.
type Roles struct {
	Reader client.Reader // the manager's cache, with IndexSubjects
}

var _ engine.RoleReader = (*Roles)(nil)

// Roles returns the roles and cluster roles bound to user.
func (r *Roles) Roles(ctx context.Context, user engine.UserInfo, namespace string) ([]string, []string, error) {
	keys := []string{"User:" + user.Username}
	for _, g := range user.Groups {
		keys = append(keys, "Group:"+g)
	}
	if rest, ok := strings.CutPrefix(user.Username, "system:serviceaccount:"); ok {
		keys = append(keys, "ServiceAccount:"+rest)
	}
	var roles, clusterRoles []string
	for _, k := range keys {
		var rbs rbacv1.RoleBindingList
		if err := r.Reader.List(ctx, &rbs, client.MatchingFields{SubjectIndex: k}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, fmt.Errorf("listing RoleBindings: %w", err)
		}
		for _, b := range rbs.Items {
			switch b.RoleRef.Kind {
			case "Role":
				roles = append(roles, b.Namespace+":"+b.RoleRef.Name)
			case "ClusterRole":
				if b.Namespace == namespace {
					clusterRoles = append(clusterRoles, b.RoleRef.Name)
				}
			}
		}
		var crbs rbacv1.ClusterRoleBindingList
		if err := r.Reader.List(ctx, &crbs, client.MatchingFields{SubjectIndex: k}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, fmt.Errorf("listing ClusterRoleBindings: %w", err)
		}
		for _, b := range crbs.Items {
			if b.RoleRef.Kind == "ClusterRole" {
				clusterRoles = append(clusterRoles, b.RoleRef.Name)
			}
		}
	}
	slices.Sort(roles)
	slices.Sort(clusterRoles)
	return slices.Compact(roles), slices.Compact(clusterRoles), nil
}
