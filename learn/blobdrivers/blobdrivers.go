// Package blobdrivers registers the cloud buckets a learn record store
// ([learn.OpenStore]) can be: s3:// (Amazon S3 and S3-compatible stores),
// gs:// (Google Cloud Storage) and azblob:// (Azure Blob Storage), with
// each provider's usual credentials (environment, config files, instance
// roles). Import it for its side effect, as the overseer CLI does:
//
//	import _ "github.com/corohq/temporal-overseer/learn/blobdrivers"
//
// Package learn itself registers only file:// and mem://, so that a
// program that keeps its records in a folder builds without the cloud
// SDKs.
package blobdrivers

import (
	_ "gocloud.dev/blob/azureblob" // azblob://
	_ "gocloud.dev/blob/gcsblob"   // gs://
	_ "gocloud.dev/blob/s3blob"    // s3://
)
