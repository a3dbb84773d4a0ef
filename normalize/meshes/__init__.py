"""Mesh files and primitive shapes: loading, bounds, mass properties and OBJ output.

- `load_mesh(path)` reads OBJ, STL, DAE, GLB or GLTF with trimesh (geometry only) and refuses
  corrupt files (`mesh.corrupt`: unparsable, truncated, NaN/infinite vertices, faces pointing
  past the vertex list, no faces) and missing ones (`mesh.missing`). Vertices are in metres: a
  COLLADA `<asset><unit meter>` is applied (its `<up_axis>` is not, as in Gazebo and RViz).
  What reading noted (`mesh.unit_scaled`, `mesh.up_axis_ignored`, and whatever trimesh logged:
  `texture.missing`, `mesh.loader_warning`) is kept in `Mesh.notes`, never printed. Loaded
  meshes are cached in process by the SHA-256 of the file content, so a mesh shared by many
  objects is parsed once.
- `geometry_bounds(geometry, pose)` is the exact axis-aligned box of a shape placed at `pose`.
- `mass_properties(geometry)` gives mass, centre of mass and inertia at uniform density
  `MESH_DENSITY`: exact formulas for primitives; for meshes the enclosed volume when the mesh is
  watertight, else its convex hull; a flat mesh (no volume either way) is weighed as a thin shell
  of thickness `SHELL_THICKNESS` (the method is reported).
- `write_obj_copy` / `write_obj_converted` / `write_capsule_obj` / `write_unit_sphere_obj`
  produce the OBJ files of the
  written convention (see docs/convention.md).

Mesh work is timed into the current object's stage record (`normalize.timing`): loading,
bounds and writing as `meshes`, mass properties as `inertia`.

`disk_cache(folder)` (a context manager) also keeps parsed meshes, mesh mass properties and the
OBJ text of converted meshes on disk, keyed by the file's content (the build puts them under its
cache folder): worker processes share them, and a later build or release reuses them even when
the object cache is invalidated by a code change. The store is keyed by this package's code and
the trimesh version too; every entry ends with its own SHA-256, and an entry that fails it is
deleted and recomputed, never trusted. GLTF files are not stored (their buffers live in other
files); a GLTF or GLB mesh that read other files (buffers, images) is not cached in the process
either, and its `sha256` covers those files' content, so caches keyed on it stay right.

A cached mesh records the same inputs as a parse (`normalize.inputs`): the files its parse read
or looked for (`Mesh.references`: COLLADA textures, GLTF buffers and images) are recorded again
on every hit, and a COLLADA texture's `texture.missing` is looked for on every load.

The modules, each importing only those before it:

- `store`: the `Mesh` record, the in-process cache, the disk store;
- `reading`: resolving mesh references and reading files (`MAX_MESH_BYTES`);
- `limits`: what a file's bytes claim, checked before parsing (triangles, textures, glTF buffers);
- `convex`: convex hulls of point sets;
- `loading`: parsing (trimesh, MuJoCo .msh, COLLADA units and textures) and `load_mesh`;
- `writing`: `OutputNames`, OBJ copies with their materials, conversions to OBJ;
- `primitives`: capsules, spheres, height fields, generated meshes;
- `bounds`, `mass`: boxes and mass properties of shapes;
- `collision`: thickened collision hulls, flat meshes doubled.

Import the names from here; a test that patches a function or limit patches the module that
looks it up (e.g. `meshes.loading._parse`, `meshes.reading.MAX_MESH_BYTES`).
"""

from normalize.meshes.bounds import geometry_bounds
from normalize.meshes.collision import (
    FLAT_FRACTION,
    MIN_COLLISION_THICKNESS,
    collision_fidelity,
    convex_collision,
    doubled_obj,
    flat_normal,
    hull_width,
    inward_offset,
    thickened_collision,
    write_collision_obj,
)
from normalize.meshes.limits import (
    GLB_PADDING,
    IMAGE_SUFFIXES,
    MAX_MESH_TRIANGLES,
    MAX_TEXTURE_PIXELS,
    MSH_HEADER,
    OBJ_BYTES_PER_FACE,
    check_texture,
    check_triangles,
    counted_triangles,
)
from normalize.meshes.loading import load_mesh
from normalize.meshes.mass import (
    MESH_DENSITY,
    SHELL_THICKNESS,
    WALL_THICKNESS,
    mass_properties,
    wall_mass_properties,
)
from normalize.meshes.primitives import (
    CAPSULE_SECTIONS,
    SPHERE_SECTIONS,
    capsule_trimesh,
    generated_obj,
    height_field_mesh,
    unit_sphere_vertices,
    write_capsule_obj,
    write_unit_sphere_obj,
)
from normalize.meshes.reading import (
    MAX_MESH_BYTES,
    MESH_SUFFIXES,
    read_mesh_bytes,
    resolve_mesh_file,
)
from normalize.meshes.store import (
    CACHE_BYTES,
    DISK_FORMAT,
    GENERATED_FOLDER,
    KEPT_BYTES,
    SHARED_STORE_VARIABLE,
    Mesh,
    clear_cache,
    disk_cache,
    finish_object,
    shared_store,
    trim_cache,
)
from normalize.meshes.store import _cache as _cache  # never rebound (bench counts it)
from normalize.meshes.writing import (
    OutputNames,
    completed_texcoords,
    write_obj_converted,
    write_obj_copy,
)

__all__ = [
    "CACHE_BYTES",
    "CAPSULE_SECTIONS",
    "DISK_FORMAT",
    "FLAT_FRACTION",
    "GENERATED_FOLDER",
    "GLB_PADDING",
    "IMAGE_SUFFIXES",
    "KEPT_BYTES",
    "MAX_MESH_BYTES",
    "MAX_MESH_TRIANGLES",
    "MAX_TEXTURE_PIXELS",
    "MESH_DENSITY",
    "MESH_SUFFIXES",
    "MIN_COLLISION_THICKNESS",
    "MSH_HEADER",
    "OBJ_BYTES_PER_FACE",
    "SHARED_STORE_VARIABLE",
    "SHELL_THICKNESS",
    "SPHERE_SECTIONS",
    "WALL_THICKNESS",
    "Mesh",
    "OutputNames",
    "capsule_trimesh",
    "check_texture",
    "check_triangles",
    "clear_cache",
    "finish_object",
    "shared_store",
    "trim_cache",
    "completed_texcoords",
    "counted_triangles",
    "disk_cache",
    "doubled_obj",
    "collision_fidelity",
    "convex_collision",
    "flat_normal",
    "generated_obj",
    "geometry_bounds",
    "height_field_mesh",
    "hull_width",
    "inward_offset",
    "load_mesh",
    "mass_properties",
    "read_mesh_bytes",
    "resolve_mesh_file",
    "thickened_collision",
    "unit_sphere_vertices",
    "wall_mass_properties",
    "write_capsule_obj",
    "write_collision_obj",
    "write_obj_converted",
    "write_obj_copy",
    "write_unit_sphere_obj",
]
